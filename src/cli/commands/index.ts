import type { Command } from "commander";
import type { CliContext } from "../context.js";
import { registerAccountCommand } from "./account.js";
import { registerHealthCommand } from "./health.js";
import { registerProxiesCommand } from "./proxies.js";
import { registerTargetingCommand } from "./targeting.js";
import { registerTaskCommand } from "./task.js";
import { registerUsageCommand } from "./usage.js";
import { registerEmulatorCommand } from "./emulator.js";

/**
 * Each command lives in its own file and registers itself here; the order is the order `--help` lists them.
 */
export function registerCommands(program: Command, ctx: CliContext): void {
	void program;
	void ctx;
	registerAccountCommand(program, ctx);
	registerUsageCommand(program, ctx);
	registerTargetingCommand(program, ctx);
	registerProxiesCommand(program, ctx);
	registerHealthCommand(program, ctx);
	registerTaskCommand(program, ctx);
	registerEmulatorCommand(program, ctx);
}
