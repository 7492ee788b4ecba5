/**
 * The agent's end of the IPC channel to its keeper (keeper/keeper.ts), which owns the postmaster
 * and the watchdog. Requests that need an answer (hello, start) resolve with it; everything the
 * keeper reports about the postmaster reaches the listeners.
 */
import {
  isMessage,
  monotonicMs,
  type PostmasterSignal,
  type ToAgent,
  type ToKeeper,
  type WatchdogStatus,
} from '../keeper/protocol.js';

export interface KeeperListener {
  /** The keeper named the running postmaster (answering hello or start); called before the answer resolves. */
  onRunning(pid: number | undefined): void;
  onLine(pid: number, line: string): void;
  onExit(pid: number, code: number | null, signal: string | null): void;
  onFired(pid: number | undefined, lateMs: number): void;
}

type Answer = Extract<ToAgent, { id: number }>;

/** The IPC side of a process, as Node.js gives it to a child started with an 'ipc' channel. */
export interface IpcProcess {
  send?: (message: unknown) => boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

export class KeeperLink {
  readonly #process: IpcProcess;
  readonly #pending = new Map<number, (answer: Answer) => void>();
  #nextId = 1;
  #listener: KeeperListener | undefined;

  /**
   * @example
   * ```ts
   * const keeper = new KeeperLink(); // in the agent process the keeper started
   * const { pid } = await keeper.hello();
   * ```
   */
  constructor(ipc: IpcProcess = process) {
    if (!ipc.send) throw new Error('the instance agent runs under its keeper: start it through main.js');
    this.#process = ipc;
    ipc.on('message', (message) => {
      if (isMessage<ToAgent>(message)) this.#receive(message);
    });
  }

  listen(listener: KeeperListener): void {
    this.#listener = listener;
  }

  /** What runs now: the postmaster's PID (if any) and the watchdog's state. */
  async hello(): Promise<{ pid: number | undefined; watchdog: WatchdogStatus }> {
    const answer = await this.#ask((id) => ({ type: 'hello', id }));
    return answer.type === 'state'
      ? { pid: answer.pid, watchdog: answer.watchdog }
      : { pid: undefined, watchdog: 'idle' };
  }

  /** Starts the postmaster (or finds the one running): its PID, or why the keeper refused. */
  async start(command: string, args: readonly string[]): Promise<{ pid: number } | { refused: string }> {
    const answer = await this.#ask((id) => ({ type: 'start', id, command, args }));
    if (answer.type === 'started') return { pid: answer.pid };
    return { refused: answer.type === 'refused' ? answer.reason : `unexpected answer ${answer.type}` };
  }

  signal(pid: number, signal: PostmasterSignal): void {
    this.#send({ type: 'signal', pid, signal });
  }

  /** Feeds the watchdog `deadlineMs`, a `performance.now()` of this process. */
  arm(deadlineMs: number): void {
    // performance.now() counts from this process's start; the keeper's clock is the host's monotonic one.
    this.#send({ type: 'arm', untilMonotonicMs: monotonicMs() + (deadlineMs - performance.now()) });
  }

  disarm(): void {
    this.#send({ type: 'disarm' });
  }

  #ask(build: (id: number) => ToKeeper): Promise<Answer> {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve);
      this.#send(build(id));
    });
  }

  #send(message: ToKeeper): void {
    // Without the channel the keeper is gone, and its parent-death signal ends this process too.
    this.#process.send?.(message);
  }

  #receive(message: ToAgent): void {
    if ('id' in message) {
      // Synchronously, before any later message: an exit may follow its start's answer at once.
      if (message.type === 'state' || message.type === 'started') this.#listener?.onRunning(message.pid);
      const resolve = this.#pending.get(message.id);
      this.#pending.delete(message.id);
      resolve?.(message);
      return;
    }
    switch (message.type) {
      case 'line':
        this.#listener?.onLine(message.pid, message.line);
        return;
      case 'exit':
        this.#listener?.onExit(message.pid, message.code, message.signal);
        return;
      case 'fired':
        this.#listener?.onFired(message.pid, message.lateMs);
        return;
    }
  }
}
