/**
 * Which requests the access log leaves out: the dashboard's own background reads (a signed-in
 * page polls several `/api/*` routes a second, and loads its files), which would bury the calls
 * an operator reads the log for. Anything that changes state, signs in, fails, or comes from a
 * client or a script is kept.
 */

export interface RequestFacts {
  method: string;
  path: string;
  status: number;
  /** The request carried a live dashboard session (not the admin Bearer token). */
  dashboardSession: boolean;
  /** The dashboard's file route answered it (the page, its assets, the icon). */
  dashboardFile: boolean;
}

export function isDashboardBackgroundRead(request: RequestFacts): boolean {
  if (request.status >= 400) return false;
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  if (request.dashboardFile) return true;
  return request.dashboardSession && request.path.startsWith('/api/');
}
