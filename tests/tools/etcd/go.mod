// Wrapper module that builds etcd (its main package is the server module root).
module github.com/capwright/capwright/tests/tools/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v3.6.8
