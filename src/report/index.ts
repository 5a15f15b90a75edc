export { renderReportHtml } from "./render-report.js";
export type { FieldFill, LatencyDistribution, PauseWindow, ReportData } from "./report-data.js";
export { pauseWindow } from "./run-log-events.js";
export { createReportCollector, REPORT_FILE, type ReportCollector, rebuildReport } from "./write-report.js";
