/**
 * Pure planning of a private apt configuration that fetches pinned .debs of one Debian suite
 * without touching the machine's own apt sources, lists or dpkg status: every directory apt
 * writes to lives under `aptDir`, and the package database it resolves against is empty.
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
  /** One `apt-get download` of every pinned package. */
  readonly download: AptCommand;
  /** The .debs `download` writes (apt's file names for `name_version_arch`), in the order of the pins. */
  readonly debFiles: readonly string[];
}

/** The plan for one package, with its single .deb named. */
export interface SingleAptFetchPlan extends AptFetchPlan {
  /** The .deb `download` writes. */
  readonly debFile: string;
}

function quoted(value: string): string {
  // apt.conf has no escape for a double quote inside a value.
  if (/["\n]/.test(value)) throw new Error(`apt configuration value ${JSON.stringify(value)} holds a quote or newline`);
  return `"${value}"`;
}

/** apt names a downloaded .deb `name_version_arch.deb`, with an epoch's colon written `%3a`. */
function debFileName(pin: DebianPackagePin): string {
  return `${pin.name}_${pin.debianVersion.replace(':', '%3a')}_${pin.architecture}.deb`;
}

/**
 * Plans fetching every one of `pins` with apt state under `aptDir` into `downloadDir`: one index
 * update and one download for them all. The pins must share a mirror, suite and architecture, as
 * one sources line and one `APT::Architecture` serve them; a package from elsewhere needs a plan
 * (and an `aptDir`) of its own.
 *
 * @example
 * ```ts
 * const plan = planAptFetchAll(nodeToolsPackages, '/cache/apt-bookworm', '/scratch/download');
 * plan.download.args; // ['download', 'containerd=1.6.20~ds1-1+deb12u3', 'runc=1.1.5+ds1-1+deb12u1', …]
 * ```
 */
export function planAptFetchAll(pins: readonly DebianPackagePin[], aptDir: string, downloadDir: string): AptFetchPlan {
  const [first] = pins;
  if (!first) throw new Error('planAptFetchAll: no package to fetch');
  for (const pin of pins) {
    // Architecture-independent packages (`all`) install on any architecture.
    const differs = (['mirror', 'suite', 'architecture'] as const).find(
      (key) => pin[key] !== first[key] && !(key === 'architecture' && pin.architecture === 'all'),
    );
    if (differs)
      throw new Error(
        `planAptFetchAll: ${pin.name} comes from ${differs} ${pin[differs]}, not ${first[differs]} as ${first.name}; plan it separately`,
      );
  }
  const names = pins.map((p) => p.name);
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice) throw new Error(`planAptFetchAll: ${twice} is pinned twice`);
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
    ['APT::Architecture', first.architecture],
    ['Acquire::Languages', 'none'],
    // AppStream metadata (5 MB) is for software centres, not for fetching a few packages.
    ['Acquire::IndexTargets::deb::DEP-11::DefaultEnabled', 'false'],
  ];
  const config = settings.map(([key, value]) => `${key} ${quoted(value)};`).join('\n');
  const env = { APT_CONFIG: configFile };
  return {
    dirs: [join(lists, 'partial'), join(archives, 'partial'), downloadDir],
    files: {
      [configFile]: `${config}\n`,
      [sourcesFile]: `deb ${first.mirror} ${first.suite} main\n`,
      [statusFile]: '',
    },
    update: { args: ['update'], cwd: aptDir, env },
    // `name=version` pins the exact version: apt fails rather than fetch another.
    download: { args: ['download', ...pins.map((p) => `${p.name}=${p.debianVersion}`)], cwd: downloadDir, env },
    debFiles: pins.map((pin) => join(downloadDir, debFileName(pin))),
  };
}

/**
 * Plans fetching `pin` with apt state under `aptDir` into `downloadDir`.
 *
 * @example
 * ```ts
 * const plan = planAptFetch(pgBackRestPackage, '/cache/apt-trixie', '/scratch/download');
 * plan.debFile; // /scratch/download/pgbackrest_2.55.1-1_amd64.deb
 * ```
 */
export function planAptFetch(pin: DebianPackagePin, aptDir: string, downloadDir: string): SingleAptFetchPlan {
  const plan = planAptFetchAll([pin], aptDir, downloadDir);
  return { ...plan, debFile: plan.debFiles[0] ?? '' };
}
