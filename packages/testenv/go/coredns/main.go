// Command coredns is CoreDNS with only the plugins testenv's cluster DNS uses: the stock build
// links every plugin (cloud DNS providers, etcd, geoip, dnstap, …), which would more than double
// what a cold cache compiles for a server that answers cluster.local from the API and NXDOMAIN
// for everything else.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

// directives is the stock order (core/dnsserver/zdirectives.go) restricted to the plugins linked
// above: a plugin's place in this list, not in the Corefile, decides which sees a query first.
var directives = []string{
	"bind",
	"ready",
	"errors",
	"template",
	"kubernetes",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
