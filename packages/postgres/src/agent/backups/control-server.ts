/**
 * The agent's local control socket (`config.agentSocket`, in the Pod's private socket directory):
 * the archive command asks it for a permit before every push and reports how the push went. A
 * unix socket, not the Pod's port: only processes of this Pod (postgres) can reach it.
 */
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { ArchiveOutcome, ArchivePermit } from '../pgbackrest-archive-push.js';

export interface ControlHandlers {
  archivePermit(): ArchivePermit;
  archiveResult(outcome: ArchiveOutcome): void;
}

const MAX_BODY = 16_384;

/**
 * @example
 * ```ts
 * const server = await startControlServer(config.agentSocket, { archivePermit: () => ({ action: 'skip', reason: 'off' }), archiveResult: () => {} });
 * ```
 */
export async function startControlServer(socketPath: string, handlers: ControlHandlers): Promise<Server> {
  const server = createServer((request, response) => {
    const answer = (code: number, body: unknown) => {
      response.writeHead(code, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (request.method === 'GET' && request.url === '/archive-permit') return answer(200, handlers.archivePermit());
    if (request.method === 'POST' && request.url === '/archive-result') {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => {
        body += chunk;
        if (body.length > MAX_BODY) request.destroy();
      });
      request.on('end', () => {
        try {
          const parsed = JSON.parse(body) as Partial<ArchiveOutcome>;
          if (typeof parsed.wal !== 'string' || typeof parsed.ok !== 'boolean')
            return answer(400, { error: 'bad outcome' });
          handlers.archiveResult({
            wal: parsed.wal,
            ok: parsed.ok,
            ...(typeof parsed.reason === 'string' ? { reason: parsed.reason.slice(0, 500) } : {}),
            ...(typeof parsed.dropped === 'string' ? { dropped: parsed.dropped.slice(0, 500) } : {}),
          });
          answer(200, {});
        } catch {
          answer(400, { error: 'not JSON' });
        }
      });
      return;
    }
    answer(404, { error: 'not found' });
  });
  // A socket left by an agent that was killed would make listen fail with EADDRINUSE.
  await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
