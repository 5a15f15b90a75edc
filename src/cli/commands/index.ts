import type { Command } from "commander";
import type { CliContext } from "../context.js";
import { registerEmulatorCommand } from "./emulator.js";

/**
 * Each command lives in its own file and registers itself here; the order is the order `--help` lists them.
 */
export function registerCommands(program: Command, ctx: CliContext): void {
	void program;
	void ctx;
	registerEmulatorCommand(program, ctx);
}
