/**
 * `spec.backups.pgbackrest` and `spec.dataSource`, in Crunchy PGO v5's shape (a compatible subset:
 * PGO manifests using these fields apply unchanged). Rules PGO checks only when it reconciles
 * (forbidden options, undeclared repositories) are refused here at admission instead.
 */
import { z } from 'zod';
import {
  credentialGlobalOptionsRule,
  globalEntriesRules,
  noControlCharacters,
  ownedGlobalOptionsRule,
  REPO_NAME_PATTERN,
  undeclaredRepoOptionRule,
} from './backup-options.js';
import { type AllowedOption, BACKUP_OPTIONS, optionRules, RESTORE_OPTIONS } from './command-options.js';
import { volumeClaimSpec } from './volume-claim-spec.js';

const cel = (...rules: object[]) => ({ 'x-kubernetes-validations': rules });

/** A string written into pgbackrest.conf (directly or as a path it names): no control character. */
const confText = (min: number, max: number) =>
  z
    .string()
    .min(min)
    .max(max)
    .meta(cel(noControlCharacters('pgbackrest.conf')));

const repoName = (what: string) =>
  z
    .string()
    .max(5)
    .regex(REPO_NAME_PATTERN)
    .describe(`Name of the repository ${what}: repo1 to repo4, one of spec.backups.pgbackrest.repos.`);

const options = (allowed: readonly AllowedOption[], command: string, description: string) =>
  z
    .array(z.string().min(1).max(512))
    .max(32)
    .meta(cel(...optionRules(allowed, `pgbackrest ${command}`)))
    .describe(
      `${description} Only these are allowed (the repository comes from repoName): ${allowed.map((o) => `--${o.name}`).join(', ')}.`,
    );

export const restoreOptions = () =>
  options(
    RESTORE_OPTIONS,
    'restore',
    'Extra command-line options of pgbackrest restore, one per item, e.g. "--type=time" and "--target=2026-01-02 03:04:05+00" for a point-in-time recovery; --target takes the form of its --type (time, lsn, xid or name).',
  );

const fileItem = z.object({
  key: confText(1, 253).describe('Key in the Secret or ConfigMap.'),
  path: z
    .string()
    .max(253)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/)
    .describe('File name in /etc/pgbackrest/conf.d. pgBackRest reads only files whose names end in .conf.'),
  mode: z
    .number()
    .int()
    .min(0)
    .max(0o777)
    .optional()
    .describe('Permission bits of the file, e.g. 384 (0600). Default: the projection default, 0644.'),
});

const projection = (kind: 'Secret' | 'ConfigMap') =>
  z
    .object({
      name: z.string().min(1).max(253).describe(`Name of the ${kind}, in the cluster's namespace.`),
      items: z
        .array(fileItem)
        .max(64)
        .optional()
        .describe('Keys to mount, each as the file `path`. Default: every key, each as a file named after the key.'),
      optional: z
        .boolean()
        .optional()
        .describe(`When true, a missing ${kind} or key is skipped; otherwise the instances wait for it.`),
    })
    .describe(`Files from a ${kind}.`);

const configurationItem = z
  .object({ secret: projection('Secret').optional(), configMap: projection('ConfigMap').optional() })
  .meta(cel({ rule: 'has(self.secret) != has(self.configMap)', message: 'exactly one of secret or configMap' }))
  .describe('Files from exactly one Secret or ConfigMap.');

/** Files of pgBackRest configuration mounted into /etc/pgbackrest/conf.d. */
export const pgbackrestConfiguration = () =>
  z
    .array(configurationItem)
    .max(16)
    .describe(
      'pgBackRest configuration files, mounted into /etc/pgbackrest/conf.d beside the configuration the operator generates, e.g. a Secret with repository credentials (repo1-s3-key, repo1-s3-key-secret in a [global] section of a .conf file). Each Secret must allow the cluster (annotation postgres.kanri.dev/allowed-clusters listing it, or *); others are not mounted.',
    );

/** The `global` section of the generated pgBackRest configuration. */
export const pgbackrestGlobal = () =>
  z
    .record(z.string().min(1).max(64), z.string().max(1024))
    .meta({
      maxProperties: 64,
      ...cel(ownedGlobalOptionsRule, credentialGlobalOptionsRule, ...globalEntriesRules),
    })
    .describe(
      'pgBackRest options for the [global] section of the configuration the operator generates, e.g. repo1-retention-full: "14" or repo1-path: /pgbackrest/my-db. Options of a repository (repoN-...) must name a declared one. Refused: options the operator sets, credentials (repoN-s3-key, repoN-s3-key-secret, repoN-cipher-pass, ...: put them in a Secret listed in configuration), and control characters.',
    );

const CRON = /^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9A-Za-z*/,?-]+( +[0-9A-Za-z*/,?-]+){4})$/;
const cron = (type: string) =>
  z
    .string()
    .max(100)
    .regex(CRON)
    .describe(
      `When to take ${type === 'incremental' ? 'an' : 'a'} ${type} backup, in cron syntax (minute hour day-of-month month day-of-week, e.g. "0 1 * * 0"), or @daily, @hourly, @weekly, @monthly, @yearly. Times are UTC.`,
    );

const storage = {
  s3: z
    .object({
      bucket: confText(1, 255).describe('The S3 bucket.'),
      endpoint: confText(1, 255).describe('The S3 endpoint for the region, e.g. s3.eu-west-1.amazonaws.com.'),
      region: confText(1, 63).describe('The region of the bucket, e.g. eu-west-1.'),
    })
    .describe(
      'A repository in an S3 (or S3-compatible) bucket. Credentials come from `configuration` (repoN-s3-key, repoN-s3-key-secret).',
    ),
  gcs: z
    .object({ bucket: confText(1, 255).describe('The Google Cloud Storage bucket.') })
    .describe(
      'A repository in Google Cloud Storage. Not yet supported by the operator: the cluster reports it in a condition.',
    ),
  azure: z
    .object({ container: confText(1, 255).describe('The Azure Blob Storage container.') })
    .describe(
      'A repository in Azure Blob Storage. Not yet supported by the operator: the cluster reports it in a condition.',
    ),
  volume: z
    .object({
      volumeClaimSpec: volumeClaimSpec('the repository volume').describe('Claim of the repository volume.'),
    })
    .describe('A repository on a PersistentVolumeClaim the operator creates.'),
};

/** One pgBackRest repository: where backups and archived WAL are kept, and when backups are taken. */
export const pgbackrestRepo = () =>
  z
    .object({
      name: z
        .string()
        .max(5)
        .regex(REPO_NAME_PATTERN)
        .describe(
          'Repository name, repo1 to repo4. pgBackRest options of this repository use it as prefix (repo1-...).',
        ),
      schedules: z
        .object({ full: cron('full'), differential: cron('differential'), incremental: cron('incremental') })
        .partial()
        .optional()
        .describe('Backups taken on a schedule into this repository; none when omitted.'),
      s3: storage.s3.optional(),
      gcs: storage.gcs.optional(),
      azure: storage.azure.optional(),
      volume: storage.volume.optional(),
    })
    .meta(
      cel({
        rule: '[has(self.s3), has(self.gcs), has(self.azure), has(self.volume)].filter(x, x).size() == 1',
        message: 'exactly one of s3, gcs, azure or volume',
      }),
    )
    .describe('A pgBackRest repository: exactly one of s3, gcs, azure or volume.');

const declaredRepo = (field: string) => ({
  rule: `!has(self.${field}) || self.repos.exists(r, r.name == self.${field}.repoName)`,
  message: `${field}.repoName must name a repository declared in repos`,
  fieldPath: `.${field}.repoName`,
});

export const pgbackrestArchive = z
  .object({
    image: z
      .string()
      .min(1)
      .max(512)
      .optional()
      .describe(
        "PGO's pgBackRest image. Accepted so that PGO manifests apply unchanged, but not used: Kanri runs pgBackRest inside its own image (the instances' and the repo host's), and records a Warning Event (PgBackRestImageIgnored) when it starts the repo host.",
      ),
    configuration: pgbackrestConfiguration().optional(),
    global: pgbackrestGlobal().optional(),
    repos: z
      .array(pgbackrestRepo())
      .min(1)
      .max(4)
      // A map list, as in PGO: names are unique (the API server says which is a duplicate) and
      // server-side apply merges repositories by name.
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] })
      .describe('The repositories, 1 to 4, with unique names. WAL is archived to every one.'),
    manual: z
      .object({
        repoName: repoName('to back up into'),
        options: options(
          BACKUP_OPTIONS,
          'backup',
          'Extra command-line options of pgbackrest backup, one per item, e.g. "--type=full".',
        ).optional(),
      })
      .optional()
      .describe(
        "Settings of one-off backups: the repository and options used when a backup is requested through the cluster's backup annotation, as in PGO. Setting them takes no backup.",
      ),
    restore: z
      .object({
        enabled: z.boolean().default(false).describe('Allow an in-place restore. Default: false.'),
        repoName: repoName('to restore from'),
        options: restoreOptions().optional(),
      })
      .optional()
      .describe(
        "An in-place restore of this cluster from repoName, replacing its current data. Runs only while enabled is true, when requested through the cluster's restore annotation, as in PGO.",
      ),
  })
  .meta(
    cel(
      declaredRepo('manual'),
      declaredRepo('restore'),
      undeclaredRepoOptionRule("self.repos.exists(r, k.startsWith(r.name + '-'))"),
    ),
  )
  .describe('pgBackRest: continuous WAL archiving and backups into 1 to 4 repositories.');

export const backups = z
  .object({ pgbackrest: pgbackrestArchive })
  .describe('Backups and WAL archiving, with pgBackRest.');

export const dataSource = z
  .object({
    postgresCluster: z
      .object({
        // Its name becomes part of the default repo path in the clone's pgbackrest.conf.
        clusterName: confText(1, 63).describe('The PostgresCluster to clone, in the same namespace.'),
        repoName: z
          .string()
          .max(5)
          .regex(REPO_NAME_PATTERN)
          .describe("The source cluster's repository to restore from, repo1 to repo4."),
        options: restoreOptions().optional(),
      })
      .optional()
      .describe("Initialise this cluster from a backup of another PostgresCluster, using that cluster's repository."),
    pgbackrest: z
      .object({
        stanza: z
          .string()
          .min(1)
          .max(63)
          .regex(/^[A-Za-z0-9._-]+$/)
          .default('db')
          .describe('The stanza in the repository to restore from. Default: db.'),
        configuration: pgbackrestConfiguration().optional(),
        global: pgbackrestGlobal().optional(),
        repo: pgbackrestRepo().describe('The repository to restore from (s3, gcs or azure).'),
        options: restoreOptions().optional(),
      })
      .meta(
        cel(
          {
            rule: '!has(self.repo.volume)',
            message: 'a pgbackrest data source must be in s3, gcs or azure, not a volume',
            fieldPath: '.repo.volume',
          },
          undeclaredRepoOptionRule("k.startsWith(self.repo.name + '-')"),
        ),
      )
      .optional()
      .describe(
        'Initialise this cluster from a pgBackRest repository in cloud storage that no PostgresCluster here owns.',
      ),
  })
  .meta(
    cel({
      rule: '!(has(self.postgresCluster) && has(self.pgbackrest))',
      message: 'at most one of postgresCluster or pgbackrest',
    }),
  )
  .describe(
    'Where the data of a new cluster comes from. Read only when the cluster is first created; default: initdb.',
  );
