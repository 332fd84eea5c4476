module github.com/capwright/capwright/api

go 1.26.0
