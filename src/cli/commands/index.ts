import { type Command, Option } from "commander";
import type { CliContext } from "../context.js";

type Register = (program: Command, ctx: CliContext) => void;

/**
 * A command as the program's `--help` lists it: its arguments as its usage shows them, whether it takes
 * options, and its description — what its own file registers (test/cli/start-up.test.ts compares the two).
 */
interface CommandSummary {
	readonly name: string;
	readonly load: () => Promise<Register>;
	readonly args?: readonly string[];
	readonly options?: true;
	readonly description: string;
}

/**
 * Every command, in the order `--help` lists them, each loaded from its own file when asked for: a
 * command's file brings in what its work needs (the run the fetch client, the job store and the report;
 * the emulator its server), so `scrapejob validate` does not load what `run` or `emulator` need.
 */
export const COMMANDS: readonly CommandSummary[] = [
	{
		name: "run",
		load: async () => (await import("./run.js")).registerRunCommand,
		args: ["<jobs...>"],
		options: true,
		description:
			"run jobs: validate, learn the account's concurrency and credits, fetch every target once, write results",
	},
	{
		name: "report",
		load: async () => (await import("./report.js")).registerReportCommand,
		args: ["<run-dir...>"],
		options: true,
		description: "rebuild report.html of run folders from their files",
	},
	{
		name: "merge",
		load: async () => (await import("./merge.js")).registerMergeCommand,
		args: ["<run-dirs...>"],
		options: true,
		description: "merge the run folders of a sharded job's shards into one results.jsonl, results.csv and summary",
	},
	{
		name: "export",
		load: async () => (await import("./export.js")).registerExportCommand,
		args: ["<job>"],
		options: true,
		description: "write the newest ok record of every target across a job's runs to one file",
	},
	{
		name: "extract",
		load: async () => (await import("./extract.js")).registerExtractCommand,
		args: ["<job>"],
		options: true,
		description:
			"re-extract: a new run of a job read from its stored pages (content: files) with the job file's current extract:, 0 credits, nothing sent",
	},
	{
		name: "fleet",
		load: async () => (await import("./fleet.js")).registerFleetCommand,
		description: "the job's fleet runs in PostgreSQL (run --fleet): where each stands",
	},
	{
		name: "validate",
		load: async () => (await import("./validate.js")).registerValidateCommand,
		args: ["<jobs...>"],
		options: true,
		description: "check job files without sending anything: every problem as file:line:col, exit 2 if any",
	},
	{
		name: "account",
		load: async () => (await import("./account.js")).registerAccountCommand,
		options: true,
		description: "show proxy products and balances, static residential packages, scraper and browser access",
	},
	{
		name: "usage",
		load: async () => (await import("./usage.js")).registerUsageCommand,
		options: true,
		description: "bandwidth usage of one proxy product, as a table and a bar chart",
	},
	{
		name: "targeting",
		load: async () => (await import("./targeting.js")).registerTargetingCommand,
		options: true,
		description: "look up targeting values: countries, and a country's regions, cities and ISPs",
	},
	{
		name: "proxies",
		load: async () => (await import("./proxies.js")).registerProxiesCommand,
		options: true,
		description: "generate a proxy list for other tools (one proxy a line)",
	},
	{
		name: "health",
		load: async () => (await import("./health.js")).registerHealthCommand,
		options: true,
		description: "check scraper connectivity and the scraper key (costs no credits)",
	},
	{
		name: "task",
		load: async () => (await import("./task.js")).registerTaskCommand,
		args: ["<task-id>"],
		options: true,
		description: "show one scraper task's state, and its result once it has finished",
	},
	{
		name: "emulator",
		load: async () => (await import("./emulator.js")).registerEmulatorCommand,
		options: true,
		description: "run the local emulator of the service (account + scraper endpoints, fault injection)",
	},
	{
		name: "schema",
		load: async () => (await import("./schema.js")).registerSchemaCommand,
		description: "print the job file's JSON Schema (for editor completion and checks)",
	},
];

/** What asks for the program's version, which needs no command. */
const VERSION_FLAGS: ReadonlySet<string> = new Set(["-V", "--version"]);

/**
 * Register the commands `argv` needs on `program`, or all of them when `argv` is omitted: the one it
 * names (also as `help NAME`); none for `--version`; otherwise (`--help`, `help`, no command, a misspelt
 * name that gets a "did you mean") each command's summary alone, which runs nothing and prints as the
 * command would in the program's help.
 */
export async function registerCommands(program: Command, ctx: CliContext, argv?: readonly string[]): Promise<void> {
	if (argv === undefined) {
		for (const register of await Promise.all(COMMANDS.map(({ load }) => load()))) register(program, ctx);
		return;
	}
	if (argv[0] !== undefined && VERSION_FLAGS.has(argv[0])) return;
	const name = argv[0] === "help" ? argv[1] : argv[0];
	const named = COMMANDS.find((command) => command.name === name);
	if (named) {
		(await named.load())(program, ctx);
		return;
	}
	for (const { name, args = [], options, description } of COMMANDS) {
		const summary = program.command(name).description(description);
		for (const arg of args) summary.argument(arg);
		// Its options are not listed in the program's help, only whether there are any (`[options]`).
		if (options) summary.addOption(new Option("--options").hideHelp());
	}
}
