// Command pause is the Pod sandbox ("infra") process of testenv's real nodes: the process
// that holds a Pod's namespaces while its containers come and go.
//
// It does what Kubernetes' build/pause/linux/pause.c does: as PID 1 of a Pod with a shared
// PID namespace it must reap the orphans that get reparented to it, or they stay zombies for
// the Pod's lifetime; it exits 0 on SIGINT or SIGTERM (the kernel delivers no signal to a
// namespace's PID 1 that it does not handle, so without handlers StopPodSandbox would wait for
// SIGKILL); otherwise it only waits.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is printed by -v, as pause.c prints its VERSION.
const version = "kanri-testenv-3.10"

func main() {
	for _, arg := range os.Args[1:] {
		if strings.EqualFold(arg, "-v") {
			fmt.Printf("pause %s\n", version)
			return
		}
	}
	if os.Getpid() != 1 {
		// Not an error: pause.c only warns too, because pause also runs outside sandboxes.
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}

	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	// A child may have exited before Notify took effect; its SIGCHLD would then be lost.
	reap()
	for sig := range signals {
		switch sig {
		case syscall.SIGCHLD:
			reap()
		default:
			fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", sig)
			os.Exit(0)
		}
	}
}

// reap collects every exited child without blocking. Signals coalesce (several children
// exiting at once raise one SIGCHLD), so it loops until none is left, like pause.c's sigreap.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
