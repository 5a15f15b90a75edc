import { Command, CommanderError } from "commander";
import { cliCommand, errorMessage, ScrapejobError } from "../common/index.js";
import { debugStacks } from "../config/index.js";
import { registerCommands } from "./commands/index.js";
import type { CliContext } from "./context.js";
import { exitCodeForError } from "./error-exit.js";
import { EXIT } from "./exit-codes.js";

/**
 * Build the program, with every command (`argv` omitted) or with the commands `argv` needs (the one it
 * names: a command's modules are loaded only when it runs). Commands write to `ctx` streams and report
 * their outcome via `ctx.exitCode` or a thrown error.
 */
export async function createProgram(ctx: CliContext, argv?: readonly string[]): Promise<Command> {
	const program = new Command();
	program
		.name("scrapejob")
		.description("Run batch scraping jobs against a credit-metered scraping + proxy service, with a local emulator.")
		.version("0.1.0")
		.showHelpAfterError("(run with --help for usage)")
		.configureOutput({
			writeOut: (text) => ctx.stdout.write(text),
			writeErr: (text) => ctx.stderr.write(text),
		})
		.exitOverride();
	await registerCommands(program, ctx, argv);
	return program;
}

/**
 * After an address that is not the service: the command that checks the addresses alone, with the
 * addresses and config file this command line gave (not printed by `health` itself).
 */
function healthHint(argv: readonly string[]): string {
	const words = ["health"];
	for (let i = 1; i < argv.length; i++) {
		const word = argv[i]!;
		const flag = SERVICE_FLAGS.find((name) => word === name || word.startsWith(`${name}=`));
		if (flag === undefined) continue;
		if (word === flag && argv[i + 1] !== undefined) words.push(flag, argv[++i]!);
		else if (word !== flag) words.push(word);
	}
	return `; \`${cliCommand(words)}\` checks it without running a job`;
}

/** The flags that say which service a command reaches (`addServiceOptions`). */
const SERVICE_FLAGS = ["--api-url", "--scraper-url", "--config"] as const;

/**
 * The only place that turns outcomes into exit codes (0 ok · 1 some failed · 2 invalid · 3 auth/credits ·
 * 4 lock held · 130 interrupted).
 */
export async function main(argv: readonly string[], ctx: CliContext): Promise<number> {
	try {
		const program = await createProgram(ctx, argv);
		await program.parseAsync([...argv], { from: "user" });
		return ctx.exitCode;
	} catch (error) {
		if (error instanceof CommanderError) {
			// --help and --version end through here with exit code 0.
			return error.exitCode === 0 ? EXIT.ok : EXIT.invalidInput;
		}
		const code = exitCodeForError(error);
		const label = error instanceof ScrapejobError ? error.code : "INTERNAL";
		const hint = label === "SCRAPEJOB_NOT_THE_SERVICE" && argv[0] !== "health" ? healthHint(argv) : "";
		ctx.stderr.write(`scrapejob: ${errorMessage(error)}${hint}${label === "INTERNAL" ? "" : ` [${label}]`}\n`);
		if (label === "INTERNAL" && error instanceof Error && error.stack && debugStacks(ctx.env)) {
			ctx.stderr.write(`${error.stack}\n`);
		}
		return code;
	}
}
