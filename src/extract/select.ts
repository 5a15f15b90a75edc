import type { AnyNode, Element } from "domhandler";
import { cssSelect } from "./html-libraries.js";

/** A CSS selector compiled once (per job, or per module for fixed ones) and run on many pages. */
export type CompiledSelector = ((element: Element) => boolean) & { readonly __compiled: unique symbol };

/** Compile a selector for HTML (tag names lower-case); throws on one that does not parse. */
export function compileCss(selector: string): CompiledSelector {
	return cssSelect().compile<AnyNode, Element>(selector, { xmlMode: false }) as unknown as CompiledSelector;
}

/** A fixed selector, compiled on first use (compiling loads css-select). */
export function lazyCss(selector: string): () => CompiledSelector {
	let compiled: CompiledSelector | undefined;
	return () => {
		compiled ??= compileCss(selector);
		return compiled;
	};
}

// css-select types a compiled query by its node type, not its element type: the casts live here only.
export function selectFirst(selector: CompiledSelector, root: AnyNode): Element | null {
	return cssSelect().selectOne<AnyNode, Element>(selector as never, root);
}

export function selectEvery(selector: CompiledSelector, root: AnyNode): Element[] {
	return cssSelect().selectAll<AnyNode, Element>(selector as never, root);
}
