"""Contender `kopf` of `npm run bench:converge` (scripts/bench-converge.mjs).

Reconciles every Item (bench.kanri.dev/v1) to one owned ConfigMap named like the Item, with
data.value = spec.value (server-side apply through kubernetes_asyncio), and sets
status.observedValue = spec.value (kopf writes `patch.status` through the status subresource).

Run by the driver as `python -m kopf run --standalone --namespace <ns> kopf_operator.py`, with
KUBECONFIG, BENCH_NAMESPACE and BENCH_WORKERS set; it runs until SIGTERM. See bench/README.md.
Dependencies: bench/converge/requirements.txt.
"""

import asyncio
import os

import kopf
from kubernetes_asyncio import client, config

GROUP, VERSION, PLURAL = 'bench.kanri.dev', 'v1', 'items'
FIELD_MANAGER = 'bench-kopf'

# kopf runs one asyncio worker per object and has no knob meaning "W reconciles at a time"
# (settings.queueing.worker_limit counts per-object workers, which linger idle for
# idle_timeout seconds and would hold their slot), so the handler bodies share a semaphore.
workers = asyncio.Semaphore(int(os.environ.get('BENCH_WORKERS', '4')))
api: client.ApiClient | None = None


@kopf.on.startup()
async def startup(**_):
    global api
    await config.load_kube_config()
    api = client.ApiClient()


@kopf.on.cleanup()
async def cleanup(**_):
    if api is not None:
        await api.close()


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field='spec.value')
async def reconcile(spec, name, namespace, status, patch: kopf.Patch, **_):
    value = spec.get('value', '')
    configmap = {
        'apiVersion': 'v1',
        'kind': 'ConfigMap',
        'metadata': {'name': name, 'namespace': namespace},
        'data': {'value': value},
    }
    kopf.adopt(configmap)  # controller ownerReference to the Item being handled
    async with workers:
        await client.CoreV1Api(api).patch_namespaced_config_map(
            name,
            namespace,
            configmap,
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type='application/apply-patch+yaml',  # JSON is YAML
        )
    if status.get('observedValue') != value:
        patch.status['observedValue'] = value
