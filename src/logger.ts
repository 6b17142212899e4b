import { pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/** LOG_FORMAT (config.ts): auto picks per command and terminal (resolveLogFormat); pretty and json force one. */
export type LogFormatSetting = 'auto' | 'pretty' | 'json';
export type LogFormat = Exclude<LogFormatSetting, 'auto'>;

/**
 * The format a command logs in. `auto`: readable lines only for `start` writing to a terminal,
 * where a person watches one machine; `serve` and `worker` run under orchestrators whose log
 * collectors parse JSON lines, and a piped `start` (a file, a supervisor) keeps JSON too.
 */
export function resolveLogFormat(setting: LogFormatSetting, command: string, stdoutIsTTY: boolean): LogFormat {
  if (setting !== 'auto') return setting;
  return command === 'start' && stdoutIsTTY ? 'pretty' : 'json';
}

export interface LoggerOptions {
  /** json (default) or pretty. */
  format?: LogFormat;
  /** Where lines go; stdout by default (tests pass a stream). */
  destination?: DestinationStream;
  /** Pretty only: colours; by default when the terminal supports them (NO_COLOR, FORCE_COLOR honoured). */
  colorize?: boolean;
}

export function createLogger(level: string, name: string, options: LoggerOptions = {}): Logger {
  const settings = { level, name, base: { pid: process.pid } };
  if (options.format !== 'pretty') {
    // Written as it is logged. pino's default stdout stream writes on libuv's thread pool and
    // flushes what is left at 'exit', which a process dying of a signal (a second Ctrl-C, a
    // hangup, the worker killing itself when a thread is stuck) never reaches: the line saying
    // why was lost whenever the pool was busy.
    return pino(settings, options.destination ?? pino.destination({ dest: 1, sync: true }));
  }
  // A stream in this thread rather than a transport (a worker thread): a line logged just before
  // process.exit (a device fault) is written synchronously instead of lost with the thread.
  const stream = pretty({
    translateTime: 'SYS:HH:MM:ss.l',
    // pid is the same on every line of one process and hostname is absent (base replaces it);
    // role (under `start` the API and the worker share one logger) leads the message instead.
    ignore: 'pid,hostname,role',
    messageFormat: '{if role}[{role}] {end}{msg}',
    sync: true,
    ...(options.colorize === undefined ? {} : { colorize: options.colorize }),
    ...(options.destination ? { destination: options.destination } : {}),
  });
  return pino(settings, stream);
}
