//go:build tools

// Keeps CloudNativePG's manager in go.mod and go.sum, so that `go build` resolves the same
// module graph every time.
package tools

import _ "github.com/cloudnative-pg/cloudnative-pg/cmd/manager"
