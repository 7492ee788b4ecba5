/** Errors raised by testenv: one base class, a subclass per step that can fail, each keeping its cause. */

export class TestenvError extends Error {
  override name = 'TestenvError';
}

/** Building or locating a control-plane binary failed. */
export class BinaryBuildError extends TestenvError {
  override name = 'BinaryBuildError';
  constructor(
    readonly component: string,
    message: string,
    readonly logTail = '',
    options?: ErrorOptions,
  ) {
    super(logTail ? `${message}\n--- last lines of the build output ---\n${logTail}` : message, options);
  }
}

/** A control-plane component exited or never became ready; the message carries the tail of its log. */
export class ComponentStartError extends TestenvError {
  override name = 'ComponentStartError';
  constructor(
    readonly component: string,
    message: string,
    readonly logTail: string,
    options?: ErrorOptions,
  ) {
    super(
      `${component}: ${message}${logTail ? `\n--- last lines of the ${component} log ---\n${logTail}` : ''}`,
      options,
    );
  }
}

/** The caller asked for something this control plane cannot do (for example `addUser` on an existing cluster). */
export class UnsupportedError extends TestenvError {
  override name = 'UnsupportedError';
}
