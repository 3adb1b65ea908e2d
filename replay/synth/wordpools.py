"""Words, code-line templates and prompts of the synthetic sessions, and the pools built from them.

Filler is sliced from pools built once (``pools()``: 16,000 code lines per language, 4,000
prose sentences, Read line-number prefixes) rather than drawn word by word, so generating
costs little next to exact token counting.
"""

from __future__ import annotations

from functools import lru_cache
from random import Random

WORDS = """the a this that it we now then also so because but which when each first next check read
update change fix add remove rename move keep call return pass fail handle parse load save build run
test function method class module file line value field config option flag error exception warning
result output input request response cache session token user client server handler router schema
model query index table column row record event queue worker job task path directory import export
type interface default missing empty invalid current previous existing new old small large simple
correct wrong expected actual before after still only already probably looks seems should would could
might needs uses returns raises expects calls reads writes stores retries timeout limit offset batch
stream buffer payload migration fixture coverage branch commit diff log""".split()
IDENTS = """user_id session config payload request response handler cache_key retries timeout items
result records batch_size offset limit cursor token account order invoice event worker settings
registry client parser schema validator""".split()
FUNCS = """load save parse build fetch update validate resolve render handle apply merge flush emit compute
normalize serialize refresh encode decode""".split()
NOUNS = "user session config order invoice event token cache route schema record report job task message".split()
CLASSES = """User Session Config Order Invoice Event Token Cache Router Schema Record Report Job Task Message
Client Store Manager Service Handler""".split()
MODULES = """auth billing cache config events handlers models parser queue router schema session storage utils
views worker client metrics export search""".split()
PY_LINES = [
    "def {f}_{n}({a}, {b}=None):", "    {a} = {b}.{f}_{n}({c})", "    if {a} is None:", "        return {b}",
    "    for {a} in {b}:", "        {a}.append({b}[{k}])", '        raise ValueError("{w} {w2} {a}")', "",
    "class {C}{C2}:", '    """{W} {w} {w2} {n}."""', "    {a}: int = {k}", "import {m}",
    "from {m}.{m2} import {C}{C2}", "    # {W} {w} {w2} {a}", "    return {a}.{f}({b}, {c}={k})",
    '    logger.debug("{f} {n} %s", {a})', '        {a}["{b}"] = {c}', "    {a} = [x for x in {c} if x.{f}()]",
    "    assert {a} == {k}", "    def {f}_{n}(self, {a}):", "        self.{a} = {b}", "        with open({a}) as fh:",
    "            {b} = json.load(fh)", "    except KeyError as exc:", "    try:", "",
]
TS_LINES = [
    "export function {f}{N}({a}: {C}, {b}?: number) {{", "  const {a} = await {b}.{f}{N}({c});", "  if (!{a}) {{",
    "    return {b};", "  }}", "  for (const {a} of {b}) {{", "    {a}.push({b}[{k}]);",
    "    throw new Error(`{w} {w2} ${{{a}}}`);", "", "export class {C}{C2} {{", "  /** {W} {w} {w2} {n}. */",
    "  private {a} = {k};", "import {{ {C}{C2} }} from './{m}';", "  // {W} {w} {w2} {a}",
    "  return {a}.{f}({b}, {{ {c}: {k} }});", "  logger.debug('{f} {n}', {a});", "  {a}['{b}'] = {c};",
    "  const {a} = {b}.filter((x) => x.{f}());", "  expect({a}).toBe({k});", "  {f}{N}({a}: string): void {{",
    "    this.{a} = {b};", "}}", "  it('{w} {w2} {n}', async () => {{", "  }});", "",
]
PROMPTS = [
    "Can you look at why {f}_{n} in {path} returns None when the {a} is missing? The {w} test keeps failing.",
    "Add a {a} option to the {m} module and cover it with a test.",
    "Refactor {m} so that {f} no longer {w} the {n} twice. Keep the public API the same.",
    "Run the tests and fix whatever is failing.",
    "Thanks. Now update the README to describe the {m} changes.",
    "The {n} endpoint is slow under load, profile {path} and suggest a fix.",
    "ok, looks good. commit this and then check the {m} handler for the same bug",
    "I'm getting this error when I run the {m} worker, any idea?",
    "Please review {path} for edge cases around {a} and {b}.",
]
LEADS = ["Let me look at {path}.", "I'll check how {f} is used across the codebase.",
         "Let me run the tests to see the current state.", "Now I'll update {path}.",
         "I'll search for the other call sites.", "Let me check the {m} module structure first."]


@lru_cache(maxsize=1)
def pools() -> dict[str, list[str]]:
    """Code lines per language, prose sentences and Read line-number prefixes, built once."""
    rng = Random(7001)
    pools: dict[str, list[str]] = {}
    for lang, templates in (("py", PY_LINES), ("ts", TS_LINES)):
        lines = []
        for _ in range(16_000):
            c = rng.choice
            lines.append(c(templates).format(
                a=c(IDENTS), b=c(IDENTS), c=c(IDENTS), f=c(FUNCS), n=c(NOUNS), N=c(CLASSES), C=c(CLASSES),
                C2=c(CLASSES), m=c(MODULES), m2=c(MODULES), w=c(WORDS), w2=c(WORDS), W=c(WORDS).capitalize(),
                k=rng.randrange(100)))
        pools[lang] = lines
    pools["prose"] = [" ".join(rng.choices(WORDS, k=rng.randint(6, 18))).capitalize() + "." for _ in range(4000)]
    pools["nums"] = [f"{i:>6}\u2192" for i in range(4000)]
    return pools
