//go:build tools

// Package tools pins versitygw, the S3 server testenv runs for backup tests; the build tag keeps
// this import out of every real build while `go mod tidy` still records its dependencies.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
