import { z } from "zod";
import { jobFileSchema } from "./schema.js";

/** Where the published copy lives, relative to the package root; a test keeps it current. */
export const JOB_SCHEMA_FILE = "jobs/job.schema.json";

/**
 * The job file's JSON Schema, generated from the zod schema (habit 3) so the two cannot drift.
 * Draft-07, the newest draft the YAML language server and most editors fully support; the input
 * side (`io: "input"`), so keys with defaults are optional, as users write them.
 */
export function jobJsonSchema(): Record<string, unknown> {
	return z.toJSONSchema(jobFileSchema, { target: "draft-7", io: "input" }) as Record<string, unknown>;
}

/** The schema as `scrapejob schema` prints it and `jobs/job.schema.json` holds it. */
export function jobJsonSchemaText(): string {
	return `${JSON.stringify(jobJsonSchema(), null, 2)}\n`;
}
