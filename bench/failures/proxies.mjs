// Cutting a process off its store through fault proxies (@kanri/testenv's startFaultProxy): the
// same cut for Kanri's agents (a proxy per node in front of the API server) and for Patroni (a
// proxy per member in front of etcd). A cut stalls every open connection, as a dead network path
// does, and refuses new ones; lifting it drops the stalled connections so that clients reconnect.

/** Stalls and refuses every connection through `proxies`. */
export function cut(proxies) {
  for (const proxy of proxies) {
    proxy.refuseNew(true);
    proxy.stallOpenConnections();
  }
}

/** Lifts a {@link cut}. */
export function reconnect(proxies) {
  for (const proxy of proxies) {
    proxy.refuseNew(false);
    proxy.dropAll();
  }
}
