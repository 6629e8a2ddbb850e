// One command line's dispatch, the same for `mvproxy` (src/cli/main.ts) and
// `mvproxy-dev` (src/tools/cli/main.ts): `PROGRAM CMD --help` and
// `PROGRAM help CMD` print that command's usage without loading it, and each
// command's module is loaded only when it runs (`mvproxy serve` must start
// fast: its sidecars wait for it).

export interface CommandLine {
  /** The name the usage texts and errors give: `mvproxy`, `mvproxy-dev`. */
  program: string;
  /** Printed for `PROGRAM`, `PROGRAM help` and an unknown command. */
  usage: string;
  /** Each command's usage, printed for `PROGRAM CMD --help` and `PROGRAM help CMD`. */
  commandUsage: Readonly<Record<string, string>>;
  /** Commands that answer --help themselves (`mvproxy admin` has a usage per verb). */
  ownHelp?: readonly string[];
  commands: Readonly<Record<string, (args: string[]) => Promise<number> | number>>;
}

/** True when the arguments ask for help (before any `--`). */
export function asksForHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

/** Runs the command `argv` names; resolves to the process's exit code. */
export async function runCommandLine(line: CommandLine, argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Own keys only: `help constructor` is an unknown command, not Object's.
  const own = <T>(table: Readonly<Record<string, T>>, name: string): T | undefined => (Object.hasOwn(table, name) ? table[name] : undefined);
  const ownsHelp = (name: string | undefined): boolean => name !== undefined && (line.ownHelp ?? []).includes(name);
  const unknown = (name: string): number => {
    process.stderr.write(`${line.program}: unknown command ${JSON.stringify(name)}\n\n${line.usage}`);
    return 2;
  };
  if (command === 'help' && ownsHelp(rest[0])) return own(line.commands, rest[0] ?? '')?.(['--help', ...rest.slice(1)]) ?? 2;
  const helpFor = command === 'help' ? rest[0] : !ownsHelp(command) && asksForHelp(rest) ? command : undefined;
  if (helpFor !== undefined) {
    const text = own(line.commandUsage, helpFor);
    if (text === undefined) return unknown(helpFor);
    process.stdout.write(text);
    return 0;
  }
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(line.usage);
    return command === undefined ? 2 : 0;
  }
  const run = own(line.commands, command);
  return run === undefined ? unknown(command) : run(rest);
}

/** Runs a program's main and sets the exit code; an error is one line on stderr, prefixed with `name`. */
export function runMain(name: string, main: () => Promise<number>): void {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`${name}: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
