/** Who provisions testenv's local volumes: the name its StorageClasses and PersistentVolumes carry. */

/** The `provisioner` of testenv's StorageClasses, and `pv.kubernetes.io/provisioned-by` of their volumes. */
export const PROVISIONER_NAME = 'kanri.dev/process-node';

/** Set by a provisioner on each PersistentVolume it made. */
export const PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by';
