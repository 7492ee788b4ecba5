/** The major-upgrade marker beside PGDATA (plan/major-upgrade-plan.ts says what each stage means). */
import { join } from 'node:path';
import { readIfExists, writeFileIfChanged } from '../files.js';
import type { UpgradeMarker } from '../plan/major-upgrade-plan.js';

export const upgradeMarkerPath = (dataDir: string) => join(dataDir, 'kanri-upgrade.json');

export async function readUpgradeMarker(dataDir: string): Promise<UpgradeMarker | undefined> {
  const text = await readIfExists(upgradeMarkerPath(dataDir));
  try {
    return text ? (JSON.parse(text) as UpgradeMarker) : undefined;
  } catch {
    return undefined;
  }
}

export async function writeUpgradeMarker(dataDir: string, marker: UpgradeMarker): Promise<void> {
  await writeFileIfChanged(upgradeMarkerPath(dataDir), `${JSON.stringify(marker)}\n`);
}

/** Records that pgBackRest's stanza follows the upgraded cluster, so a later start does not run `stanza-upgrade` again. */
export async function markStanzaUpgraded(dataDir: string): Promise<void> {
  const marker = await readUpgradeMarker(dataDir);
  if (marker?.stage === 'succeeded') await writeUpgradeMarker(dataDir, { ...marker, stanzaUpgraded: true });
}
