import type { Command } from "commander";
import type { CliContext } from "../context.js";
import { registerAccountCommand } from "./account.js";
import { registerEmulatorCommand } from "./emulator.js";
import { registerExportCommand } from "./export.js";
import { registerExtractCommand } from "./extract.js";
import { registerFleetCommand } from "./fleet.js";
import { registerHealthCommand } from "./health.js";
import { registerMergeCommand } from "./merge.js";
import { registerProxiesCommand } from "./proxies.js";
import { registerReportCommand } from "./report.js";
import { registerRunCommand } from "./run.js";
import { registerSchemaCommand } from "./schema.js";
import { registerTargetingCommand } from "./targeting.js";
import { registerTaskCommand } from "./task.js";
import { registerUsageCommand } from "./usage.js";
import { registerValidateCommand } from "./validate.js";

/**
 * Each command lives in its own file and registers itself here; the order is the order `--help` lists them.
 */
export function registerCommands(program: Command, ctx: CliContext): void {
	registerRunCommand(program, ctx);
	registerReportCommand(program, ctx);
	registerMergeCommand(program, ctx);
	registerExportCommand(program, ctx);
	registerExtractCommand(program, ctx);
	registerFleetCommand(program, ctx);
	registerValidateCommand(program, ctx);
	registerAccountCommand(program, ctx);
	registerUsageCommand(program, ctx);
	registerTargetingCommand(program, ctx);
	registerProxiesCommand(program, ctx);
	registerHealthCommand(program, ctx);
	registerTaskCommand(program, ctx);
	registerEmulatorCommand(program, ctx);
	registerSchemaCommand(program, ctx);
}
