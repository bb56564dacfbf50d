import { request } from './http.js';
import type { EndpointsInfo } from '@gatehouse/admin-api/types.js';

export function getEndpoints(signal?: AbortSignal): Promise<EndpointsInfo> {
  return request<EndpointsInfo>('GET', '/api/endpoints', { signal });
}
