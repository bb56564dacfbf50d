export * from './config.js';
export * from './endpoints.js';
export * from './http.js';
export * from './keys.js';
export * from './logs.js';
export * from './models.js';
export * from './session.js';
export * from './usage.js';
export type * from '../../../src/admin-api/types.js';
