/**
 * Unit tests of the extension's pure parts (no JupyterLab, no DOM): `jlpm test`.
 */
module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/src/__tests__/**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': [
      'ts-jest',
      {
        tsconfig: {
          module: 'commonjs',
          target: 'ES2018',
          lib: ['ES2018', 'DOM'],
          strict: true,
          esModuleInterop: true,
          types: ['jest']
        }
      }
    ]
  }
};
