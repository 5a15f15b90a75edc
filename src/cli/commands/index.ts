import type { Command } from "commander";
import type { CliContext } from "../context.js";

/**
 * Each command lives in its own file and registers itself here; the order is the order `--help` lists them.
 */
export function registerCommands(program: Command, ctx: CliContext): void {
	void program;
	void ctx;
}
