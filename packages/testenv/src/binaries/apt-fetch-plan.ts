/**
 * Pure planning of a private apt configuration that fetches one pinned .deb from another Debian
 * release without touching the machine's own apt sources, lists or dpkg status: every directory
 * apt writes to lives under `aptDir`, and the package database it resolves against is empty.
 */
import { join } from 'node:path';

/** One binary package, pinned to an exact Debian version and the SHA-256 of its .deb. */
export interface DebianPackagePin {
  readonly name: string;
  /** The upstream version, as the program reports it. */
  readonly version: string;
  /** The Debian package version, for example `2.55.1-1`. */
  readonly debianVersion: string;
  readonly architecture: string;
  readonly suite: string;
  readonly mirror: string;
  readonly sha256: string;
}

/** One `apt-get` invocation under the private configuration. */
export interface AptCommand {
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
}

export interface AptFetchPlan {
  /** Directories to create before apt runs (apt refuses to create its own `partial/` dirs). */
  readonly dirs: readonly string[];
  /** Files to write: the apt configuration, its sources list and an empty dpkg status. */
  readonly files: Readonly<Record<string, string>>;
  readonly update: AptCommand;
  readonly download: AptCommand;
  /** The .deb `download` writes (apt's file name for `name_version_arch`). */
  readonly debFile: string;
}

function quoted(value: string): string {
  // apt.conf has no escape for a double quote inside a value.
  if (/["\n]/.test(value)) throw new Error(`apt configuration value ${JSON.stringify(value)} holds a quote or newline`);
  return `"${value}"`;
}

/** Plans fetching `pin` with apt state under `aptDir` into `downloadDir`. */
export function planAptFetch(pin: DebianPackagePin, aptDir: string, downloadDir: string): AptFetchPlan {
  const state = join(aptDir, 'state');
  const lists = join(state, 'lists');
  const cache = join(aptDir, 'cache');
  const archives = join(cache, 'archives');
  const configFile = join(aptDir, 'apt.conf');
  const sourcesFile = join(aptDir, 'sources.list');
  const statusFile = join(state, 'status');
  const settings: [string, string][] = [
    ['Dir::Etc::SourceList', sourcesFile],
    ['Dir::Etc::SourceParts', '/nonexistent'],
    ['Dir::State', state],
    ['Dir::State::Lists', lists],
    // An empty status: apt resolves as if nothing were installed, and never reads the machine's dpkg database.
    ['Dir::State::status', statusFile],
    ['Dir::Cache', cache],
    ['Dir::Cache::Archives', archives],
    // As root apt downloads as `_apt`, which cannot write into a cache under /root.
    ['APT::Sandbox::User', 'root'],
    ['APT::Architecture', pin.architecture],
    ['Acquire::Languages', 'none'],
    // AppStream metadata (5 MB) is for software centres, not for fetching one package.
    ['Acquire::IndexTargets::deb::DEP-11::DefaultEnabled', 'false'],
  ];
  const config = settings.map(([key, value]) => `${key} ${quoted(value)};`).join('\n');
  const env = { APT_CONFIG: configFile };
  return {
    dirs: [join(lists, 'partial'), join(archives, 'partial'), downloadDir],
    files: {
      [configFile]: `${config}\n`,
      [sourcesFile]: `deb ${pin.mirror} ${pin.suite} main\n`,
      [statusFile]: '',
    },
    update: { args: ['update'], cwd: aptDir, env },
    download: { args: ['download', `${pin.name}=${pin.debianVersion}`], cwd: downloadDir, env },
    debFile: join(downloadDir, `${pin.name}_${pin.debianVersion}_${pin.architecture}.deb`),
  };
}
