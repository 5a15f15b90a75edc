import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/**
 * A package loaded on first use, through its CommonJS build so that its API stays synchronous. For
 * the libraries only some runs need (HTML parsing and CSS selectors, public-suffix domains): a plain
 * list run never parses a page, and loading them would cost it ~4 MB of resident memory and ~2 MB
 * of heap for nothing.
 */
export function lazyModule<T>(name: string): () => T {
	let loaded: T | undefined;
	return () => {
		loaded ??= require(name) as T;
		return loaded;
	};
}
