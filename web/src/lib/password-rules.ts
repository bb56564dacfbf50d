/** The server's rule (docs/admin-api.md): 12 to 1,024 characters. Checked here to answer early. */
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 1024;

export interface PasswordCheck {
  longEnough: boolean;
  tooLong: boolean;
  matches: boolean;
  ok: boolean;
}

export function checkNewPassword(password: string, repeat: string): PasswordCheck {
  // Characters, not UTF-16 units, as the server counts them.
  const length = [...password].length;
  const longEnough = length >= PASSWORD_MIN_LENGTH;
  const tooLong = length > PASSWORD_MAX_LENGTH;
  const matches = password !== '' && password === repeat;
  return { longEnough, tooLong, matches, ok: longEnough && !tooLong && matches };
}
