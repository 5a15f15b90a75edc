/**
 * Turns a successful fetch into what the caller asked for: `delivery` raw (the content itself) or
 * json (a wrapper object), `content` html (default), markdown, pdf or screenshot. The emulator has
 * no browser, so pdf and screenshot answers are tiny valid placeholder files.
 */
import { extractTitle, isTextContentType, toMarkdown } from "./page-analysis.js";
import type { ServiceExtractionOptions } from "./scheme-extract.js";

export interface RenderOptions {
	readonly delivery: "raw" | "json";
	readonly content: "html" | "markdown" | "pdf" | "screenshot";
	readonly includeContent: boolean;
	/** Service-side extraction asked for (`extract_scheme`, `ai_enhance`), answered in JSON delivery. */
	readonly extraction: ServiceExtractionOptions | null;
}

export interface RenderedContent {
	readonly body: Buffer | string;
	readonly contentType: string;
	/** The content as a string: text as is, binary as base64 (JSON delivery and task bodies). */
	readonly text: string;
	readonly title: string;
}

/** A 1×1 transparent PNG. */
const PLACEHOLDER_PNG = Buffer.from(
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
	"base64",
);

/** A one-page empty PDF. */
const PLACEHOLDER_PDF = Buffer.from(
	"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n" +
		"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n",
	"latin1",
);

export function readRenderOptions(params: Readonly<Record<string, unknown>>, isTruthy: (v: unknown) => boolean) {
	const content = params.content;
	const options: RenderOptions = {
		delivery: params.delivery === "json" ? "json" : "raw",
		content:
			isTruthy(params.screenshot) || content === "screenshot"
				? "screenshot"
				: isTruthy(params.pdf) || content === "pdf"
					? "pdf"
					: content === "markdown"
						? "markdown"
						: "html",
		includeContent: isTruthy(params.include_content),
		extraction:
			params.extract_scheme !== undefined || isTruthy(params.ai_enhance)
				? {
						scheme: params.extract_scheme,
						ai: isTruthy(params.ai_enhance)
							? {
									prompt: typeof params.ai_prompt === "string" ? params.ai_prompt : null,
									source: typeof params.ai_source === "string" ? params.ai_source : null,
								}
							: null,
					}
				: null,
	};
	return options;
}

export function renderContent(body: Buffer, contentType: string, options: RenderOptions): RenderedContent {
	switch (options.content) {
		case "screenshot":
			return binary(PLACEHOLDER_PNG, "image/png", body, contentType);
		case "pdf":
			return binary(PLACEHOLDER_PDF, "application/pdf", body, contentType);
		case "markdown": {
			const html = body.toString("utf8");
			const markdown = toMarkdown(html);
			return { body: markdown, contentType: "text/markdown; charset=utf-8", text: markdown, title: extractTitle(html) };
		}
		case "html": {
			if (!isTextContentType(contentType)) {
				return { body, contentType, text: body.toString("base64"), title: "" };
			}
			// Raw delivery never needs the string; decode it only for JSON delivery or a task body.
			let text: string | undefined;
			const decode = () => {
				text ??= body.toString("utf8");
				return text;
			};
			return {
				body,
				contentType,
				get text() {
					return decode();
				},
				get title() {
					return extractTitle(decode());
				},
			};
		}
		default: {
			const unreachable: never = options.content;
			throw new Error(`unknown content ${String(unreachable)}`);
		}
	}
}

function binary(file: Buffer, fileType: string, page: Buffer, pageType: string): RenderedContent {
	return {
		body: file,
		contentType: fileType,
		text: file.toString("base64"),
		title: isTextContentType(pageType) ? extractTitle(page.toString("utf8")) : "",
	};
}
