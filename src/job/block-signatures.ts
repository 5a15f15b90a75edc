import { z } from "zod";
import {
	type BlockSignatures,
	compileCss,
	DEFAULT_BLOCK_SIGNATURE_SET,
	DEFAULT_BLOCK_SIGNATURES,
} from "../extract/index.js";
import { describeValue } from "./problems.js";

const ENTRY_RULE = 'must be a text to find, {text: "…"} or {css: "…"}';

const cssSchema = z
	.string()
	.min(1)
	.superRefine((css, ctx) => {
		try {
			compileCss(css);
		} catch (error) {
			ctx.addIssue({
				code: "custom",
				message: `is not a CSS selector: ${error instanceof Error ? error.message : String(error)}`,
			});
		}
	})
	.describe("A CSS selector: the page is blocked when an element matches it");

const entrySchema = z.union(
	[
		z.string().min(1).describe("Text to find in the page's HTML (case-insensitive)"),
		z.strictObject({ text: z.string().min(1).describe("Text to find in the page's HTML (case-insensitive)") }),
		z.strictObject({ css: cssSchema }),
	],
	{ error: (issue) => `${ENTRY_RULE} (got ${describeValue(issue.input)})` },
);

/** `block_signatures:` (docs/behaviour.md, "Useful records"). */
export const blockSignaturesSchema = z
	.array(entrySchema)
	.describe(
		`What marks a page as a block page or interstitial (its record is then not useful): texts to find, {text: "…"}, or {css: "…"}. Default: ${DEFAULT_BLOCK_SIGNATURES.length} texts of common captcha, JavaScript-check and access-denied pages; [] turns them off`,
	);

export type BlockSignaturesInput = z.output<typeof blockSignaturesSchema>;

/** The job's signatures, split by kind: the default set when the job sets none. */
export function normalizeBlockSignatures(entries: BlockSignaturesInput | undefined): BlockSignatures {
	if (entries === undefined) return DEFAULT_BLOCK_SIGNATURE_SET;
	const text: string[] = [];
	const css: string[] = [];
	for (const entry of entries) {
		if (typeof entry === "string") text.push(entry);
		else if ("text" in entry) text.push(entry.text);
		else css.push(entry.css);
	}
	return { text, css };
}
