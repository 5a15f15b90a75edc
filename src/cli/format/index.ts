export {
	type BarChartOptions,
	type BarPoint,
	barColumns,
	drawBar,
	MIN_BAR_COLUMNS,
	renderBarChart,
} from "./bar-chart.js";
export { type Candidate, closestMatches } from "./closest.js";
export { collectSecrets, maskRecordSecrets, SECRET_FIELDS } from "./mask-secrets.js";
export { PRODUCT_NAMES, productName } from "./products.js";
export { describeSavedItems, type SavedItemsReport } from "./saved-items.js";
export { createStyle, displayWidth, type Style } from "./style.js";
export { formatTable, type TableColumn, type TableOptions } from "./table.js";
export { DEFAULT_COLUMNS, terminalColumns } from "./terminal.js";
export { formatMegabytes, formatNumber, formatSeconds, MB_PER_GB, MB_PER_TB } from "./units.js";
