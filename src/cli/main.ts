import { Command, CommanderError } from "commander";
import { errorMessage, ScrapejobError } from "../common/index.js";
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
	argumentsBeforeRequiredOptions(program);
	return program;
}

/**
 * Commander checks required options before arguments, so `export` alone said "required option
 * '--latest' not specified" before the job file it lacks. A command with required arguments checks its
 * required options just before its action instead, after commander's argument check, with its words.
 */
function argumentsBeforeRequiredOptions(command: Command): void {
	for (const sub of command.commands) argumentsBeforeRequiredOptions(sub);
	const required = command.options.filter((option) => option.mandatory);
	if (required.length === 0 || !command.registeredArguments.some((argument) => argument.required)) return;
	for (const option of required) option.makeOptionMandatory(false);
	command.hook("preAction", () => {
		const missing = required.find((option) => command.getOptionValue(option.attributeName()) === undefined);
		if (missing !== undefined) {
			command.error(`error: required option '${missing.flags}' not specified`, {
				code: "commander.missingMandatoryOptionValue",
			});
		}
	});
}

/**
 * The only place that turns outcomes into exit codes (0 ok · 1 some failed · 2 invalid · 3 auth/credits ·
 * 4 lock held · 130 interrupted).
 */
export async function main(argv: readonly string[], ctx: CliContext): Promise<number> {
	let program: Command | undefined;
	try {
		program = await createProgram(ctx, argv);
		await program.parseAsync([...argv], { from: "user" });
		return ctx.exitCode;
	} catch (error) {
		if (error instanceof CommanderError) {
			// --help and --version end through here with exit code 0.
			if (error.exitCode === 0) return EXIT.ok;
			// Loaded only here, as the job module it brings is no use to most commands' start.
			if (program !== undefined)
				(await import("./json-error.js")).answerCommanderErrorInJson(ctx, program, argv, error);
			return EXIT.invalidInput;
		}
		const code = exitCodeForError(error);
		const label = error instanceof ScrapejobError ? error.code : "INTERNAL";
		// Loaded only here: a command that never fails so should not load the HTTP client for it.
		const hint =
			label === "SCRAPEJOB_NOT_THE_SERVICE"
				? await (await import("./wrong-address-hint.js")).wrongAddressHint(error, argv, ctx.signal)
				: "";
		ctx.stderr.write(`scrapejob: ${errorMessage(error)}${hint}${label === "INTERNAL" ? "" : ` [${label}]`}\n`);
		if (label === "INTERNAL" && error instanceof Error && error.stack && debugStacks(ctx.env)) {
			ctx.stderr.write(`${error.stack}\n`);
		}
		return code;
	}
}
