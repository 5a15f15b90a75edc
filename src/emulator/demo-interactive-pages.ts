/**
 * Demo-site pages that only a browser with steps gets the data from: a search form whose
 * results page is built by script after submit, and a list that loads more items on a click.
 * Deterministic, so tests can assert what the steps should find.
 */

/** The demo catalogue's search: product names containing the query (case-insensitive), at most 10. */
export function demoSearchResults(query: string, pages: number): string[] {
	const needle = query.trim().toLowerCase();
	if (needle === "") return [];
	const names = Array.from({ length: pages }, (_, index) => demoItemName(index + 1));
	return names.filter((name) => name.toLowerCase().includes(needle)).slice(0, 10);
}

const WORDS = ["laptop", "phone", "tablet", "camera", "monitor", "keyboard", "speaker", "router"] as const;

function demoItemName(id: number): string {
	return `${WORDS[id % WORDS.length]} model ${id}`;
}

/**
 * `/search`: a form; submitting it (Enter or the button) goes to `/search?q=…`, whose results are
 * rendered by script a moment after load (so a `wait_for` is needed to see them).
 */
export function searchPage(query: string | null, pages: number): string {
	const results = query === null ? [] : demoSearchResults(query, pages);
	const data = JSON.stringify(results).replace(/</g, "\\u003c");
	return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Search</title></head>
<body>
<h1>Search the demo shop</h1>
<form action="/search" method="get"><input id="q" name="q" value=""><button id="go" type="submit">Search</button></form>
<ul class="results"></ul>
<script>
const results = ${data};
if (location.search) setTimeout(() => {
  const list = document.querySelector(".results");
  for (const name of results) { const li = document.createElement("li"); li.className = "result"; li.textContent = name; list.append(li); }
  const done = document.createElement("p"); done.id = "done"; done.textContent = results.length + " results"; document.body.append(done);
}, 150);
</script>
</body>
</html>
`;
}

/** `/load-more`: 5 items; each click on `#more` appends 5 more (up to 20), by script. */
export function loadMorePage(): string {
	return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Load more</title></head>
<body>
<h1>Items</h1>
<ul id="items"></ul>
<button id="more">Load more</button>
<script>
let shown = 0;
function more() {
  const list = document.getElementById("items");
  for (let i = 0; i < 5 && shown < 20; i++) { shown++; const li = document.createElement("li"); li.className = "item"; li.textContent = "Item " + shown; list.append(li); }
  if (shown >= 20) document.getElementById("more").remove();
}
more();
document.getElementById("more").addEventListener("click", () => setTimeout(more, 50));
</script>
</body>
</html>
`;
}
