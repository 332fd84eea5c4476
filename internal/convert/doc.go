// Package convert turns cluster-api-operator provider CRs
// (operator.cluster.x-k8s.io/v1alpha2) and the providers of clusterctl's
// inventory (clusterctl.cluster.x-k8s.io/v1alpha3 Provider) into Capwright
// provider CRs (providers.capwright.io/v1alpha1), and says, field by field,
// what has no equivalent or needs a human: a Finding.
//
// It is pure: it takes decoded documents and returns objects and findings.
// It never reads Secrets, ConfigMaps or anything else the CRs reference, so
// the findings name what to check instead of guessing their content. For an
// inventory provider, the caller hands in its running Deployments and the
// components file of its release; the converter reads the clusterctl
// variables back from them and names those the CR needs, never printing a
// value.
//
// The operator's types are mirrored here (operator_types.go) rather than
// imported, so that the main module does not depend on
// sigs.k8s.io/cluster-api-operator; a test compares them with the
// operator's CRDs at the version they mirror (OperatorVersion).
package convert
