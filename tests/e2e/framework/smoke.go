package framework

// SmokeManifests are what the smoke test and the demo deliver: a namespace,
// a ConfigMap and a two-replica Deployment.
const SmokeManifests = `apiVersion: v1
kind: Namespace
metadata:
  name: smoke
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: smoke-settings
  namespace: smoke
data:
  greeting: hello from an OCI artifact
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: smoke-app
  namespace: smoke
spec:
  replicas: 2
  selector:
    matchLabels:
      app: smoke-app
  template:
    metadata:
      labels:
        app: smoke-app
    spec:
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
`
