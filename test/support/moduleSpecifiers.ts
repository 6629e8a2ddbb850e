// The modules a TypeScript file names, in every form it can name them; read
// by the architecture test (test/unit/architecture.test.ts) and the image's
// (test/unit/deploy/dockerImage.test.ts).
import ts from 'typescript';

/** `require` or `require.resolve`. */
function isRequire(callee: ts.Expression): boolean {
  if (ts.isIdentifier(callee)) return callee.text === 'require';
  return ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression) && callee.expression.text === 'require' && callee.name.text === 'resolve';
}

/**
 * Every module specifier of a file: import, import type, export ... from,
 * import(), import('x').T, import x = require(), require('x') and
 * require.resolve('x').
 */
export function moduleSpecifiers(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const literal = (node: ts.Node | undefined): void => {
    if (node && ts.isStringLiteralLike(node)) found.push(node.text);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) literal(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) literal(node.moduleReference.expression);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) literal(node.arguments[0]);
    else if (ts.isCallExpression(node) && isRequire(node.expression)) literal(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) literal(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}
