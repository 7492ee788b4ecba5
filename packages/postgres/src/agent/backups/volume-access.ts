/**
 * How this instance reaches the cluster's volume repos: through the repo host's pgBackRest TLS
 * server, once its Pod has published where that server's configuration is, and with this Pod's
 * own certificate once the operator issued it. Pure (reads the caches only).
 */
import { names, readServerInfo, type VolumeRepoAccess } from '../../contract/index.js';
import type { AgentContext } from '../context.js';

export function volumeAccess(ctx: Pick<AgentContext, 'view' | 'config' | 'pgbackrest'>): VolumeRepoAccess {
  const pod = ctx.view.pod(names.repoHost(ctx.config.cluster));
  const info = readServerInfo(pod);
  const address = pod?.status?.podIP;
  const tls = ctx.pgbackrest.tls;
  const serving = address && info && !pod?.metadata?.deletionTimestamp;
  return {
    ...(tls ? { tls } : {}),
    ...(serving ? { repoHost: { address, config: info.config } } : {}),
  };
}
