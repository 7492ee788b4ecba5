/** Client credentials for extra users of a started control plane (`ControlPlane.addUser`). */
import { join } from 'node:path';
import type { UserCredentials, UserOptions } from '../control-plane-types.js';
import { TestenvError } from '../errors.js';
import { buildKubeconfig, writeKubeconfig } from './kubeconfig.js';
import type { CertificateAuthority } from './pki.js';

/** Issues a client certificate for `user` and writes a kubeconfig for it under `dataDir/users`. */
export async function issueUser(
  ca: CertificateAuthority,
  dataDir: string,
  server: string,
  user: UserOptions,
): Promise<UserCredentials> {
  if (!/^[A-Za-z0-9][A-Za-z0-9@._:-]*$/.test(user.name)) {
    throw new TestenvError(`addUser: name "${user.name}" must be letters, digits and @._:- (it becomes a file name)`);
  }
  const groups = [...(user.groups ?? [])];
  const cert = await ca.issue({ commonName: user.name, organizations: groups, usage: 'client' });
  const kubeconfig = buildKubeconfig({
    clusterName: 'kanri-testenv',
    server,
    caPem: ca.certPem,
    userName: user.name,
    certPem: cert.certPem,
    keyPem: cert.keyPem,
  });
  const kubeconfigPath = join(dataDir, 'users', `${user.name.replaceAll(':', '_')}.kubeconfig`);
  await writeKubeconfig(kubeconfigPath, kubeconfig);
  return { name: user.name, groups, kubeconfig, kubeconfigPath };
}
