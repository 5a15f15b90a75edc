import { z } from "zod";
import { FIELD_TYPES } from "../extract/index.js";

/**
 * `extract:`, `extract_checks:`, `carry:` and a source's `id_column` as written
 * (docs/guides/extraction.md). Shapes only; field names, selectors and regexes are checked in extract-rules.ts.
 */

const fieldObjectSchema = z
	.strictObject({
		css: z.string().optional().describe("CSS selector: the first match's text (whitespace collapsed), or `attr`"),
		attr: z.string().min(1).optional().describe("With css: read this attribute (href, src, content, …)"),
		all: z.boolean().optional().describe('Every match, as a list (JSON array; joined with " | " in CSV)'),
		regex: z
			.string()
			.optional()
			.describe("Regular expression (RE2: no lookaround or backreferences) over the raw HTML: its first capture group"),
		jsonld: z.string().optional().describe("Dotted path into the page's JSON-LD, arrays searched (brand.name)"),
		meta: z.string().optional().describe("<meta name|property=...> content"),
		type: z
			.enum(FIELD_TYPES)
			.optional()
			.describe('text (default) | number ("$1,299.00" -> 1299) | integer | url (resolved) | html (outer HTML)'),
		required: z.boolean().optional().describe("Counts for extract_checks.min_fill"),
		pattern: z
			.string()
			.optional()
			.describe("Contract: a found value (each item of a list) must match this regular expression (RE2)"),
		min: z.number().optional().describe("Contract: a found number may not be below this (number, integer)"),
		max: z.number().optional().describe("Contract: a found number may not be above this (number, integer)"),
		min_length: z
			.number()
			.int()
			.min(1)
			.optional()
			.describe("Contract: a found value (each item of a list) has at least this many characters"),
	})
	.describe("One extracted field: one locator (css, regex, jsonld or meta) and a type");

export const extractFieldSchema = z
	.union([z.string(), fieldObjectSchema])
	.describe("A CSS selector (text of the first match), or a field with its locator and type");

export const extractSchema = z
	.record(z.string(), extractFieldSchema)
	.describe("Fields per page: each becomes a key of `data` and a CSV column, in this order");

export const extractChecksSchema = z
	.strictObject({
		min_fill: z
			.number()
			.min(0)
			.max(1)
			.optional()
			.describe(
				"Contract: a required field filled in fewer than this share of ok records breaks it (exit 1, not promoted)",
			),
		max_fill_drop: z
			.number()
			.min(0)
			.max(1)
			.optional()
			.describe(
				"Contract: a field's fill rate may fall at most this much (0.2 = 20 points) below its mean over the last 5 complete runs",
			),
		max_rows_drop: z
			.number()
			.min(0)
			.max(1)
			.optional()
			.describe("Contract: ok records may fall at most this share below their mean over the last 5 complete runs"),
		max_changed: z
			.number()
			.min(0)
			.max(1)
			.optional()
			.describe("Contract: at most this share of the run's ok records may have changed"),
	})
	.describe(
		"The data contract, judged when a run completes: a run that breaks it is not promoted to latest (exit 1, contract_failed)",
	);

export const carrySchema = z
	.array(z.string().min(1))
	.describe("Columns of a CSV source copied into each record (and the CSV) unchanged");

export const idColumnSchema = z
	.string()
	.min(1)
	.describe("CSV header of a column whose value becomes the target id (e.g. your SKU)");
