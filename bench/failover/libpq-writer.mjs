// Drives libpq_writer.py, the one client of the failover benchmark for every system: libpq with
// every member's address and target_session_attrs=read-write (psycopg on the machine's libpq).
// The same interface as writer.mjs's Writer, so the trial reads its acknowledged commits alike.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { AckLog } from './ack-log.mjs';
import { withParentDeathSignal } from './processes.mjs';

const script = fileURLToPath(new URL('libpq_writer.py', import.meta.url));

/** performance.now() for a CLOCK_MONOTONIC time in ns (Node's hrtime reads the same clock as Python's monotonic_ns). */
function fromMonotonicNs(ns) {
  const offsetMs = Number(process.hrtime.bigint()) / 1e6 - performance.now();
  return Number(ns) / 1e6 - offsetMs;
}

export class LibpqWriter extends AckLog {
  trial = 0;
  #child;
  #pauses = [];
  #exited;
  #stderr = '';

  /**
   * @param python the interpreter of the virtual environment with psycopg (bench/failover/requirements.txt)
   * @param credentials { user, password, database }
   */
  constructor(python, { user, password, database }) {
    super();
    const [cmd, argv] = withParentDeathSignal(python, [script]);
    this.#child = spawn(cmd, argv, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, PGUSER: user, PGPASSWORD: password, PGDATABASE: database },
    });
    this.#child.stderr.setEncoding('utf8').on('data', (d) => {
      this.#stderr = (this.#stderr + d).slice(-4096);
    });
    this.#exited = new Promise((resolve) => this.#child.on('close', resolve));
    createInterface({ input: this.#child.stdout }).on('line', (line) => {
      const [word, ...rest] = line.split(' ');
      if (word === 'ack') {
        const [trial, seq, ns, address] = rest;
        this.acks.push({ trial: Number(trial), seq: Number(seq), at: fromMonotonicNs(ns), address });
      } else if (word === 'fail') this.failures++;
      else if (word === 'paused') this.#pauses.shift()?.();
    });
  }

  #send(line) {
    if (this.#child.exitCode != null) throw new Error(`the libpq writer exited: ${this.#stderr.trim().slice(-300)}`);
    this.#child.stdin.write(`${line}\n`);
  }

  /** The members, in the order libpq tries them on its next connection. */
  setHosts(addresses) {
    this.#send(`hosts ${addresses.join(',')}`);
  }

  /** Starts (or resumes) writing rows tagged with `trial`. */
  resume(trial) {
    this.trial = trial;
    this.#send(`resume ${trial}`);
  }

  /** Stops writing after the transaction in flight; resolves once it has settled. */
  async pause() {
    const paused = new Promise((resolve) => this.#pauses.push(resolve));
    this.#send('pause');
    await Promise.race([paused, this.#exited]);
  }

  async stop() {
    if (this.#child.exitCode == null) this.#child.stdin.end('stop\n');
    await Promise.race([this.#exited, sleep(5_000)]);
    this.#child.kill('SIGKILL');
  }
}
