/**
 * What the emulator needs to know about a fetched page: whether a browser would have been needed
 * (auto mode's upgrade), its title (JSON delivery) and its Markdown form (`content=markdown`).
 */
import { NodeHtmlMarkdown } from "node-html-markdown";

/** Below this much visible text (characters) a page with a script counts as rendered by the script. */
const SCRIPT_RENDERED_MAX_TEXT = 64;
/** Bigger bodies have real content; a shell page is small. Checked first so big pages cost nothing. */
const SCRIPT_RENDERED_MAX_BYTES = 256 * 1024;

const SCRIPT_TAG = Buffer.from("<script");
const SCRIPT_TAG_UPPER = Buffer.from("<SCRIPT");

/** True for a near-empty body with a `<script>`: a page only a browser would see content on. */
export function looksScriptRendered(body: Buffer): boolean {
	if (body.length > SCRIPT_RENDERED_MAX_BYTES) return false;
	if (body.indexOf(SCRIPT_TAG) < 0 && body.indexOf(SCRIPT_TAG_UPPER) < 0) return false;
	const html = body.toString("utf8");
	const bodyStart = html.search(/<body[\s>]/i);
	const text = (bodyStart >= 0 ? html.slice(bodyStart) : html)
		.replace(/<(script|style|noscript|template)[\s>][\s\S]*?<\/\1\s*>/gi, " ")
		.replace(/<[^>]*>/g, " ")
		.replace(/&[a-z#0-9]+;/gi, " ")
		.replace(/\s+/g, "");
	return text.length < SCRIPT_RENDERED_MAX_TEXT;
}

const TITLE = /<title[^>]*>([\s\S]*?)<\/title>/i;
const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", apos: "'" };

/** The page's `<title>`, with whitespace collapsed and the common entities decoded; "" when none. */
export function extractTitle(html: string): string {
	const match = TITLE.exec(html);
	if (!match) return "";
	return (match[1] ?? "")
		.replace(/&(amp|lt|gt|quot|#39|apos);/g, (_, name: string) => ENTITIES[name] ?? "")
		.replace(/\s+/g, " ")
		.trim();
}

let converter: NodeHtmlMarkdown | undefined;

/** Convert HTML to Markdown (node-html-markdown; one converter instance reused). */
export function toMarkdown(html: string): string {
	converter ??= new NodeHtmlMarkdown();
	return converter.translate(html);
}

export function isTextContentType(contentType: string): boolean {
	return /^(text\/|application\/(xhtml\+xml|xml|json|javascript))/i.test(contentType);
}
