import type { Command } from "commander";
import { JOB_SCHEMA_FILE, jobJsonSchemaText } from "../../job/index.js";
import type { CliContext } from "../context.js";

export function registerSchemaCommand(program: Command, ctx: CliContext): void {
	program
		.command("schema")
		.description("print the job file's JSON Schema (for editor completion and checks)")
		.addHelpText(
			"after",
			`
Prints the JSON Schema (draft-07) of job files, generated from the validator itself, so editors
complete keys and flag mistakes as you type. The same schema ships as ${JOB_SCHEMA_FILE}; point
the YAML language server at it with a first line such as:
  # yaml-language-server: $schema=./job.schema.json

The schema checks shapes only; \`npx scrapejob validate\` also checks the service's rules across keys,
\${VAR} references and source files.

Examples:
  npx scrapejob schema > job.schema.json`,
		)
		.action(() => {
			ctx.stdout.write(jobJsonSchemaText());
		});
}
