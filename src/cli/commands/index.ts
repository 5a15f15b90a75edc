import type { Command } from "commander";
import type { CliContext } from "../context.js";

type Register = (program: Command, ctx: CliContext) => void;

/**
 * Every command, in the order `--help` lists them, each loaded from its own file when asked for: a
 * command's file brings in what its work needs (the run the fetch client, the job store and the report;
 * the emulator its server), so `scrapejob validate` does not load what `run` or `emulator` need.
 */
export const COMMANDS: ReadonlyArray<readonly [name: string, load: () => Promise<Register>]> = [
	["run", async () => (await import("./run.js")).registerRunCommand],
	["report", async () => (await import("./report.js")).registerReportCommand],
	["merge", async () => (await import("./merge.js")).registerMergeCommand],
	["export", async () => (await import("./export.js")).registerExportCommand],
	["extract", async () => (await import("./extract.js")).registerExtractCommand],
	["fleet", async () => (await import("./fleet.js")).registerFleetCommand],
	["validate", async () => (await import("./validate.js")).registerValidateCommand],
	["account", async () => (await import("./account.js")).registerAccountCommand],
	["usage", async () => (await import("./usage.js")).registerUsageCommand],
	["targeting", async () => (await import("./targeting.js")).registerTargetingCommand],
	["proxies", async () => (await import("./proxies.js")).registerProxiesCommand],
	["health", async () => (await import("./health.js")).registerHealthCommand],
	["task", async () => (await import("./task.js")).registerTaskCommand],
	["emulator", async () => (await import("./emulator.js")).registerEmulatorCommand],
	["schema", async () => (await import("./schema.js")).registerSchemaCommand],
];

/** What asks for the program's version, which needs no command. */
const VERSION_FLAGS: ReadonlySet<string> = new Set(["-V", "--version"]);

/**
 * Register the commands `argv` needs on `program`: the one it names, none for `--version`, or every
 * command when it names none of them (`--help`, `help`, a misspelt name that gets a "did you mean").
 */
export async function registerCommands(program: Command, ctx: CliContext, argv?: readonly string[]): Promise<void> {
	if (argv?.[0] !== undefined && VERSION_FLAGS.has(argv[0])) return;
	const named = argv === undefined ? undefined : COMMANDS.find(([name]) => name === argv[0]);
	const registers = await Promise.all((named ? [named] : COMMANDS).map(([, load]) => load()));
	for (const register of registers) register(program, ctx);
}
