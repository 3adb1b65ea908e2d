"""Deterministic corpora for the scrubber tests, generated here (no real data, no real secrets).

* ``planted_corpus(seed)``: documents of realistic code, config, ``.env`` files, shell logs,
  JSON, stack traces, HTTP dumps and docs with secrets planted at known places. Every
  secret has a random body in its provider's real format and records the strings that
  must not survive scrubbing.
* ``clean_corpus(seed)``: the same kinds of text without secrets, full of things that look
  a bit like them: git SHAs, UUIDs, SRI/go.sum hashes, Docker digests, base64 images,
  minified JavaScript, long identifiers, ``password: string`` declarations, environment
  lookups and ``${SECRET}`` placeholders.

The same seed gives the same bytes.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from dataclasses import dataclass, field

B62 = string.ascii_letters + string.digits
B64 = B62 + "+/"
B64URL = B62 + "-_"
HEX = "0123456789abcdef"
UPPER_ALNUM = string.ascii_uppercase + string.digits
B32 = string.ascii_uppercase + "234567"

WORDS = (
    "account user order invoice payment session cache config request response handler service client "
    "server worker queue event message stream record report export import upload download parser "
    "builder factory manager provider adapter validator serializer router controller middleware "
    "schema model entity repository migration index table column query filter sort page limit "
    "offset cursor batch job task schedule retry timeout backoff metric counter gauge trace span "
    "logger level format output input buffer reader writer channel socket connection pool driver "
    "profile avatar settings preference theme layout header footer sidebar modal button form field "
    "label tooltip dropdown search result item list grid card chart graph node edge path tree leaf "
    "root branch commit merge rebase tag release version build deploy stage cluster region zone"
).split()
NAMES = ("alice bob carol dave erin frank grace heidi ivan judy mallory niaj olivia peggy rupert "
         "sybil trent victor walter").split()
TLDS = ("com", "io", "dev", "net", "org", "cloud", "app")


@dataclass
class Planted:
    kind: str
    value: str
    # Every string here must be absent from the scrubbed text (defaults to (value,)).
    parts: tuple[str, ...] = ()

    def must_vanish(self) -> tuple[str, ...]:
        return self.parts or (self.value,)


@dataclass
class Doc:
    context: str
    text: str
    secrets: list[Planted] = field(default_factory=list)


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)

    # --- primitives ---------------------------------------------------------------------
    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def mixed(self, alphabet: str, n: int) -> str:
        """Random string that has at least one digit, upper and lower letter (as real keys do)."""
        while True:
            v = self.s(alphabet, n)
            if any(c.isdigit() for c in v) and any(c.isupper() for c in v) and any(c.islower() for c in v):
                return v

    def word(self) -> str:
        return self.r.choice(WORDS)

    def words(self, n: int) -> str:
        return " ".join(self.word() for _ in range(n))

    def snake(self, n: int = 3) -> str:
        return "_".join(self.word() for _ in range(n))

    def camel(self, n: int = 3) -> str:
        w = [self.word() for _ in range(n)]
        return w[0] + "".join(x.capitalize() for x in w[1:])

    def pascal(self, n: int = 2) -> str:
        return "".join(self.word().capitalize() for _ in range(n))

    def name(self) -> str:
        return self.r.choice(NAMES)

    def host(self) -> str:
        return f"{self.word()}-{self.r.randint(1, 9)}.{self.word()}.{self.r.choice(TLDS)}"

    def path(self, depth: int = 3, ext: str = "py") -> str:
        return "/".join(["src"] + [self.word() for _ in range(depth - 1)]) + f"/{self.snake(2)}.{ext}"

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def sha(self, n: int = 40) -> str:
        return self.s(HEX, n)

    def iso(self) -> str:
        return (f"2025-{self.r.randint(1, 12):02d}-{self.r.randint(1, 28):02d}T{self.r.randint(0, 23):02d}:"
                f"{self.r.randint(0, 59):02d}:{self.r.randint(0, 59):02d}.{self.r.randint(0, 999):03d}Z")

    def b64bytes(self, n: int, urlsafe: bool = False) -> str:
        raw = bytes(self.r.getrandbits(8) for _ in range(n))
        return (base64.urlsafe_b64encode(raw).rstrip(b"=") if urlsafe else base64.b64encode(raw)).decode()

    def password(self, url_safe: bool = False) -> str:
        if self.r.random() < 0.3:  # human-chosen: Word + digits + symbol
            sym = self.r.choice("!*-_.~" if url_safe else "!@#%^*-_.?")
            return self.word().capitalize() + self.word() + str(self.r.randint(10, 9999)) + sym
        alphabet = B62 + ("-_.~!*" if url_safe else "!%^*-_.~@#?")
        return self.mixed(alphabet, self.r.randint(12, 24))

    # --- secrets ------------------------------------------------------------------------
    def aws_key_id(self) -> str:
        return self.r.choice(("AKIA", "ASIA")) + self.s(B32, 16)

    def aws_secret(self) -> str:
        return self.mixed(B64, 40)

    def gcp_api_key(self) -> str:
        return "AIza" + self.mixed(B64URL, 35)

    def github_token(self) -> str:
        k = self.r.random()
        if k < 0.25:
            return "github_pat_" + self.mixed(B62, 22) + "_" + self.mixed(B62, 59)
        return self.r.choice(("ghp_", "gho_", "ghs_", "ghu_")) + self.mixed(B62, 36)

    def gitlab_token(self) -> str:
        return "glpat-" + self.mixed(B64URL, 20)

    def slack_token(self) -> str:
        p = self.r.choice(("xoxb", "xoxp", "xoxa"))
        return f"{p}-{self.s(string.digits, 12)}-{self.s(string.digits, 13)}-{self.mixed(B62, 24)}"

    def slack_webhook(self) -> str:
        return f"https://hooks.slack.com/services/T{self.s(UPPER_ALNUM, 8)}/B{self.s(UPPER_ALNUM, 10)}/{self.mixed(B62, 24)}"

    def stripe_key(self) -> str:
        p = self.r.choice(("sk_live_", "sk_test_", "rk_live_"))
        return p + self.mixed(B62, self.r.choice((24, 99)))

    def stripe_webhook_secret(self) -> str:
        return "whsec_" + self.mixed(B62, 32)

    def openai_key(self) -> str:
        if self.r.random() < 0.5:
            return "sk-proj-" + self.mixed(B64URL, 74) + "T3BlbkFJ" + self.mixed(B64URL, 74)
        return "sk-" + self.mixed(B62, 20) + "T3BlbkFJ" + self.mixed(B62, 20)

    def anthropic_key(self) -> str:
        return "sk-ant-api03-" + self.mixed(B64URL, 93) + "AA"

    def google_oauth(self) -> str:
        k = self.r.random()
        if k < 0.4:
            return "ya29.a0" + self.mixed(B64URL, 150)
        if k < 0.7:
            return "1//0" + self.mixed(B64URL, 80)
        return "GOCSPX-" + self.mixed(B64URL, 28)

    def npm_token(self) -> str:
        return "npm_" + self.mixed(B62, 36)

    def pypi_token(self) -> str:
        return "pypi-AgEIcHlwaS5vcmc" + self.mixed(B64URL, 140)

    def hf_token(self) -> str:
        return "hf_" + self.mixed(B62, 34)

    def sendgrid_key(self) -> str:
        return "SG." + self.mixed(B64URL, 22) + "." + self.mixed(B64URL, 43)

    def azure_account_key(self) -> str:
        return self.b64bytes(64)  # 88 characters with == padding

    def azure_sas_sig(self) -> str:
        return self.b64bytes(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")

    def azure_client_secret(self) -> str:
        return self.s(B62, 3) + str(self.r.randint(0, 9)) + "Q~" + self.s(B62 + "_~.-", 34)

    def jwt(self) -> str:
        header = {"alg": self.r.choice(("HS256", "RS256", "ES256")), "typ": "JWT"}
        payload = {"sub": self.uuid(), "iat": self.r.randint(1_700_000_000, 1_760_000_000),
                   "exp": self.r.randint(1_760_000_000, 1_800_000_000), "scope": self.words(2),
                   "email": f"{self.name()}@{self.host()}"}

        def enc(o: dict) -> str:
            return base64.urlsafe_b64encode(json.dumps(o, separators=(",", ":")).encode()).rstrip(b"=").decode()

        return f"{enc(header)}.{enc(payload)}.{self.b64bytes(32, urlsafe=True)}"

    def bearer(self) -> str:
        return self.mixed(B64URL + ".", self.r.randint(32, 64))

    def generic_key(self) -> str:
        return self.mixed(B62, self.r.choice((32, 40, 48, 64)))

    def pem(self, kind: str) -> tuple[str, tuple[str, ...]]:
        """A private key block and its body lines (each must vanish)."""
        label = {"rsa": "RSA PRIVATE KEY", "ec": "EC PRIVATE KEY", "openssh": "OPENSSH PRIVATE KEY",
                 "pkcs8": "PRIVATE KEY", "pgp": "PGP PRIVATE KEY BLOCK"}[kind]
        body = self.b64bytes(self.r.choice((120, 240, 600, 1190)))
        lines = [body[i:i + 64] for i in range(0, len(body), 64)]
        if kind == "pgp":
            block = f"-----BEGIN {label}-----\n\n" + "\n".join(lines) + f"\n={self.s(B64, 4)}\n-----END {label}-----"
        else:
            block = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"
        return block, tuple(x for x in lines if len(x) >= 20)


class _Planter:
    """Collects the secrets planted into one document."""

    def __init__(self, g: _Gen):
        self.g = g
        self.secrets: list[Planted] = []

    def __call__(self, kind: str, value: str, parts: tuple[str, ...] = ()) -> str:
        self.secrets.append(Planted(kind, value, parts))
        return value


# --- planted documents ---------------------------------------------------------------


def _code_noise(g: _Gen, n: int) -> list[str]:
    out = []
    for _ in range(n):
        k = g.r.random()
        if k < 0.3:
            out.append(f"def {g.snake(3)}({g.word()}, {g.word()}=None):")
            out.append(f"    return {g.word()}.{g.snake(2)}({g.word()})")
        elif k < 0.6:
            out.append(f"    {g.snake(2)} = {g.camel(2)}({g.r.randint(0, 500)}, {g.word()!r})")
        elif k < 0.8:
            out.append(f"# {g.words(g.r.randint(4, 10))}")
        else:
            out.append(f"logger.info(\"{g.words(5)} %s\", {g.snake(2)})")
    return out


def _doc_env(g: _Gen) -> Doc:
    p = _Planter(g)
    lines = ["# generated by setup script", "NODE_ENV=production", f"PORT={g.r.randint(3000, 9000)}",
             "LOG_LEVEL=info", f"APP_NAME={g.word()}-{g.word()}"]
    opts = [
        lambda: f"DATABASE_URL=postgres://{g.name()}:{p('db_password', g.password(True))}@{g.host()}:5432/{g.word()}",
        lambda: f"REDIS_URL=redis://:{p('db_password', g.password(True))}@{g.host()}:6379/0",
        lambda: f"MONGO_URI=mongodb+srv://{g.name()}:{p('db_password', g.password(True))}@cluster0.{g.s(HEX, 5)}.mongodb.net/{g.word()}?retryWrites=true",
        lambda: f"STRIPE_SECRET_KEY={p('stripe_key', g.stripe_key())}",
        lambda: f"STRIPE_WEBHOOK_SECRET={p('stripe_key', g.stripe_webhook_secret())}",
        lambda: f"AWS_ACCESS_KEY_ID={p('aws_access_key_id', g.aws_key_id())}",
        lambda: f"AWS_SECRET_ACCESS_KEY={p('aws_secret_access_key', g.aws_secret())}",
        lambda: f"OPENAI_API_KEY={p('openai_key', g.openai_key())}",
        lambda: f"ANTHROPIC_API_KEY={p('anthropic_key', g.anthropic_key())}",
        lambda: f"GITHUB_TOKEN={p('github_token', g.github_token())}",
        lambda: f"GITLAB_TOKEN={p('gitlab_token', g.gitlab_token())}",
        lambda: f"SLACK_BOT_TOKEN={p('slack_token', g.slack_token())}",
        lambda: f"SLACK_WEBHOOK_URL={p('slack_webhook', g.slack_webhook())}",
        lambda: f"SENDGRID_API_KEY={p('sendgrid_key', g.sendgrid_key())}",
        lambda: f"HF_TOKEN={p('huggingface_token', g.hf_token())}",
        lambda: f"JWT_SECRET={p('password_assignment', g.generic_key())}",
        lambda: f"SESSION_SECRET=\"{p('password_assignment', g.password())}\"",
        lambda: f"ADMIN_PASSWORD={p('password_assignment', g.password())}",
        lambda: f"export DB_PASSWORD='{p('password_assignment', g.password())}'",
        lambda: f"GOOGLE_API_KEY={p('gcp_api_key', g.gcp_api_key())}",
        lambda: f"GOOGLE_CLIENT_SECRET={p('google_oauth', 'GOCSPX-' + g.mixed(B64URL, 28))}",
        lambda: f"NPM_TOKEN={p('npm_token', g.npm_token())}",
        lambda: f"SEARCH_API_KEY={p('generic_api_key', g.generic_key())}",
    ]
    for f in g.r.sample(opts, g.r.randint(4, 8)):
        lines.append(f())
        if g.r.random() < 0.4:
            lines.append(f"{g.snake(2).upper()}={g.r.choice(['true', 'false', str(g.r.randint(1, 100)), g.word()])}")
    return Doc(".env", "\n".join(lines) + "\n", p.secrets)


def _doc_python_settings(g: _Gen) -> Doc:
    p = _Planter(g)
    pw = g.password()
    text = "\n".join([
        f'"""Settings for the {g.word()} service."""',
        "import os",
        "from pathlib import Path",
        "",
        "BASE_DIR = Path(__file__).resolve().parent.parent",
        f"SECRET_KEY = \"{p('password_assignment', g.mixed(B62 + '!@%^*-_=+', 50))}\"",
        "DEBUG = False",
        f"ALLOWED_HOSTS = [\"{g.host()}\", \"localhost\"]",
        "DATABASES = {",
        "    'default': {",
        "        'ENGINE': 'django.db.backends.postgresql',",
        f"        'NAME': '{g.word()}',",
        f"        'USER': '{g.name()}',",
        f"        'PASSWORD': '{p('password_assignment', pw)}',",
        f"        'HOST': '{g.host()}',",
        "    }",
        "}",
        f"AWS_ACCESS_KEY_ID = \"{p('aws_access_key_id', g.aws_key_id())}\"",
        f"AWS_SECRET_ACCESS_KEY = \"{p('aws_secret_access_key', g.aws_secret())}\"",
        f"STRIPE_API_KEY = '{p('stripe_key', g.stripe_key())}'",
        *_code_noise(g, 4),
        f"client = OpenAI(api_key=\"{p('openai_key', g.openai_key())}\")",
        f"anthropic_client = anthropic.Anthropic(api_key='{p('anthropic_key', g.anthropic_key())}')",
        f"HF_HUB_TOKEN = \"{p('huggingface_token', g.hf_token())}\"",
    ])
    return Doc("python settings", text + "\n", p.secrets)


def _doc_js_config(g: _Gen) -> Doc:
    p = _Planter(g)
    text = "\n".join([
        "import Stripe from 'stripe';",
        f"import {{ {g.pascal(2)} }} from './{g.word()}';",
        "",
        f"const stripe = new Stripe('{p('stripe_key', g.stripe_key())}', {{ apiVersion: '2024-06-20' }});",
        "export const config = {",
        f"  apiKey: \"{p('generic_api_key', g.generic_key())}\",",
        f"  firebase: {{ apiKey: '{p('gcp_api_key', g.gcp_api_key())}', projectId: '{g.word()}-{g.r.randint(100, 999)}' }},",
        "  db: {",
        f"    host: '{g.host()}',",
        f"    password: \"{p('password_assignment', g.password())}\",",
        "  },",
        f"  slackWebhook: '{p('slack_webhook', g.slack_webhook())}',",
        "};",
        "",
        f"export async function {g.camel(3)}(id: string) {{",
        f"  const res = await fetch(`https://{g.host()}/v1/{g.word()}/${{id}}`, {{",
        f"    headers: {{ Authorization: 'Bearer {p('bearer_token', g.bearer())}' }},",
        "  });",
        "  return res.json();",
        "}",
        f"const octokit = new Octokit({{ auth: '{p('github_token', g.github_token())}' }});",
        f"const sg = require('@sendgrid/mail'); sg.setApiKey('{p('sendgrid_key', g.sendgrid_key())}');",
    ])
    return Doc("typescript config", text + "\n", p.secrets)


def _doc_yaml(g: _Gen) -> Doc:
    p = _Planter(g)
    text = "\n".join([
        "version: '3.8'",
        "services:",
        "  db:",
        "    image: postgres:16",
        "    environment:",
        f"      POSTGRES_USER: {g.name()}",
        f"      POSTGRES_PASSWORD: {p('password_assignment', g.password())}",
        f"      POSTGRES_DB: {g.word()}",
        "  app:",
        f"    image: ghcr.io/{g.name()}/{g.word()}:latest",
        "    environment:",
        f"      - DATABASE_URL=mysql://{g.name()}:{p('db_password', g.password(True))}@db:3306/{g.word()}",
        f"      - GITHUB_TOKEN={p('github_token', g.github_token())}",
        f"      - AWS_ACCESS_KEY_ID={p('aws_access_key_id', g.aws_key_id())}",
        "    ports:",
        "      - '8080:8080'",
        "smtp:",
        f"  host: smtp.{g.host()}",
        f"  username: {g.name()}",
        f"  password: {p('password_assignment', g.password())}",
        "registry:",
        f"  api_key: {p('generic_api_key', g.generic_key())}",
        f"  client_secret: '{p('azure_client_secret', g.azure_client_secret())}'",
    ])
    return Doc("docker-compose yaml", text + "\n", p.secrets)


def _doc_json_config(g: _Gen) -> Doc:
    p = _Planter(g)
    conn = (f"DefaultEndpointsProtocol=https;AccountName={g.word()}{g.r.randint(10, 99)};"
            f"AccountKey={p('azure_storage_key', g.azure_account_key())};EndpointSuffix=core.windows.net")
    sb = (f"Endpoint=sb://{g.word()}.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
          f"SharedAccessKey={p('azure_storage_key', g.b64bytes(32))}")
    obj = {
        "Logging": {"LogLevel": {"Default": "Information"}},
        "ConnectionStrings": {"Storage": conn, "ServiceBus": sb},
        "Database": {"Host": g.host(), "User": g.name(), "Password": p("password_assignment", g.password())},
        "Integrations": {
            "sendgridApiKey": p("sendgrid_key", g.sendgrid_key()),
            "slackToken": p("slack_token", g.slack_token()),
            "webhookSecret": p("stripe_key", g.stripe_webhook_secret()),
        },
        "FeatureFlags": {g.camel(2): g.r.random() < 0.5 for _ in range(3)},
        "BlobSasUrl": (f"https://{g.word()}.blob.core.windows.net/{g.word()}?sv=2022-11-02&ss=b&srt=sco&sp=rl"
                       f"&se=2026-01-01T00:00:00Z&sig={p('azure_sas_signature', g.azure_sas_sig())}"),
    }
    return Doc("appsettings json", json.dumps(obj, indent=2) + "\n", p.secrets)


def _doc_gcp_service_account(g: _Gen) -> Doc:
    p = _Planter(g)
    block, lines = g.pem("pkcs8")
    key_id = g.sha(40)
    project = f"{g.word()}-{g.word()}-{g.r.randint(100000, 999999)}"
    obj = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": p("gcp_service_account", key_id),
        "private_key": block + "\n",
        "client_email": f"{g.word()}@{project}.iam.gserviceaccount.com",
        "client_id": str(g.r.randint(10**20, 10**21)),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    p("private_key", lines[0], lines)
    return Doc("gcp service account json", json.dumps(obj, indent=2) + "\n", p.secrets)


def _doc_shell_log(g: _Gen) -> Doc:
    p = _Planter(g)
    lines = [f"$ cd ~/{g.word()}/{g.word()}", "$ git status", "On branch main",
             "nothing to commit, working tree clean"]
    opts = [
        lambda: [f"$ export GITHUB_TOKEN={p('github_token', g.github_token())}"],
        lambda: [f"$ curl -s -H \"Authorization: Bearer {p('bearer_token', g.bearer())}\" https://api.{g.host()}/v2/{g.word()}",
                 '{"status":"ok","items":[]}'],
        lambda: [f"$ curl -H 'X-Api-Key: {p('generic_api_key', g.generic_key())}' https://{g.host()}/health", "OK"],
        lambda: [f"$ git clone https://oauth2:{p('gitlab_token', g.gitlab_token())}@gitlab.com/{g.name()}/{g.word()}.git",
                 f"Cloning into '{g.word()}'...", "remote: Enumerating objects: 1042, done."],
        lambda: [f"$ git remote add origin https://{g.name()}:{p('url_password', g.password(True))}@git.{g.host()}/{g.word()}.git"],
        lambda: [f"$ psql \"postgresql://{g.name()}:{p('db_password', g.password(True))}@{g.host()}:5432/{g.word()}\" -c 'select 1'",
                 " ?column? ", "----------", "        1", "(1 row)"],
        lambda: [f"$ npm config set //registry.npmjs.org/:_authToken={p('npm_token', g.npm_token())}"],
        lambda: [f"$ aws configure set aws_secret_access_key {p('aws_secret_access_key', g.aws_secret())}",
                 f"$ aws configure set aws_access_key_id {p('aws_access_key_id', g.aws_key_id())}"],
        lambda: [f"$ twine upload dist/* -u __token__ -p {p('pypi_token', g.pypi_token())}"],
        lambda: [f"$ mysql -h {g.host()} -u {g.name()} --password={p('password_assignment', g.password())} {g.word()}"],
        lambda: [f"$ curl -u {g.name()}:{p('password_assignment', g.password(True))} https://{g.host()}/api/{g.word()}"],
        lambda: [f"$ huggingface-cli login --token {p('huggingface_token', g.hf_token())}"],
        lambda: ["$ gcloud auth print-access-token", p('google_oauth', g.google_oauth())],
        lambda: [f"$ export ANTHROPIC_API_KEY=\"{p('anthropic_key', g.anthropic_key())}\""],
        lambda: [f"$ docker login -u {g.name()} --password {p('password_assignment', g.password())} ghcr.io"],
        lambda: ["$ echo $SLACK_TOKEN", p('slack_token', g.slack_token())],
    ]
    for f in g.r.sample(opts, g.r.randint(3, 6)):
        lines.extend(f())
        if g.r.random() < 0.5:
            lines.append(f"$ ls {g.word()}")
            lines.append("  ".join(f"{g.snake(2)}.py" for _ in range(4)))
    return Doc("shell log", "\n".join(lines) + "\n", p.secrets)


def _doc_stack_trace(g: _Gen) -> Doc:
    p = _Planter(g)
    k = g.r.random()
    if k < 0.4:
        pw = p("db_password", g.password(True))
        text = "\n".join([
            "Traceback (most recent call last):",
            f'  File "/srv/app/{g.path()}", line {g.r.randint(10, 400)}, in {g.snake(2)}',
            f"    {g.snake(2)} = engine.connect()",
            '  File "/usr/lib/python3.11/site-packages/sqlalchemy/engine/base.py", line 3268, in connect',
            "    return self._connection_cls(self)",
            "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at "
            f'"{g.host()}" (10.0.{g.r.randint(0, 255)}.{g.r.randint(0, 255)}), port 5432 failed: timeout expired',
            f"(Background on this error at: https://sqlalche.me/e/20/e3q8) url=postgresql://{g.name()}:{pw}@{g.host()}:5432/{g.word()}",
        ])
    elif k < 0.7:
        text = "\n".join([
            f"Exception in thread \"main\" java.sql.SQLException: Access denied for user '{g.name()}'@'10.1.2.3'",
            f"\tat com.{g.word()}.{g.pascal(2)}.{g.camel(2)}({g.pascal(2)}.java:{g.r.randint(10, 300)})",
            f"\tat com.{g.word()}.Main.main(Main.java:42)",
            f"Caused by: connecting to jdbc:mysql://{g.name()}:{p('db_password', g.password(True))}@{g.host()}:3306/{g.word()}",
        ])
    else:
        tok = p("jwt", g.jwt())
        text = "\n".join([
            "Error: Request failed with status code 401",
            "    at createError (/app/node_modules/axios/lib/core/createError.js:16:15)",
            "    at settle (/app/node_modules/axios/lib/core/settle.js:17:12)",
            f"  config: {{ url: 'https://{g.host()}/v1/{g.word()}', method: 'get',",
            f"    headers: {{ Accept: 'application/json', Authorization: 'Bearer {tok}' }} }}",
        ])
    return Doc("stack trace", text + "\n", p.secrets)


def _doc_http(g: _Gen) -> Doc:
    p = _Planter(g)
    tok = p("jwt", g.jwt())
    refresh = p("generic_api_key", g.generic_key())
    text = "\n".join([
        "POST /oauth/token HTTP/1.1",
        f"Host: auth.{g.host()}",
        "Content-Type: application/json",
        f"Authorization: Basic {p('bearer_token', base64.b64encode((g.name() + ':' + g.password()).encode()).decode())}",
        "",
        "HTTP/1.1 200 OK",
        "Content-Type: application/json",
        f"X-Request-Id: {g.uuid()}",
        "",
        json.dumps({"access_token": tok, "refresh_token": refresh, "token_type": "Bearer", "expires_in": 3600}),
        "",
        f"GET /v1/{g.word()} HTTP/1.1",
        f"Authorization: Bearer {p('google_oauth', 'ya29.a0' + g.mixed(B64URL, 150))}",
    ])
    return Doc("http dump", text + "\n", p.secrets)


def _doc_docs(g: _Gen) -> Doc:
    p = _Planter(g)
    text = "\n".join([
        f"# {g.pascal(2)}",
        "",
        f"{g.words(12).capitalize()}.",
        "",
        "## Quick start",
        "",
        "```bash",
        f"export OPENAI_API_KEY={p('openai_key', g.openai_key())}",
        f"pip install {g.word()}-{g.word()}",
        "```",
        "",
        f"To post to the team channel use the webhook {p('slack_webhook', g.slack_webhook())} (rotate it monthly).",
        f"The staging token is `{p('github_token', g.github_token())}`; it expires in 30 days.",
        f"Maps use the key {p('gcp_api_key', g.gcp_api_key())}.",
        "",
        f"{g.words(15).capitalize()}.",
    ])
    return Doc("markdown docs", text + "\n", p.secrets)


def _doc_pem(g: _Gen) -> Doc:
    p = _Planter(g)
    kind = g.r.choice(("rsa", "ec", "openssh", "pkcs8", "pgp"))
    block, lines = g.pem(kind)
    how = g.r.random()
    if how < 0.4:
        text = block + "\n"
        ctx = f"{kind} key file"
    elif how < 0.7:
        text = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls-" + g.word() + "\ntype: kubernetes.io/tls\n"
                "stringData:\n  tls.key: |\n" + "\n".join("    " + x for x in block.split("\n")) + "\n")
        ctx = "k8s secret yaml"
    else:
        text = json.dumps({"name": g.word(), "key": block}) + "\n"  # escaped \n inside a JSON string
        ctx = "json-escaped key"
    p("private_key", lines[0], lines)
    return Doc(ctx, text, p.secrets)


def _doc_toml(g: _Gen) -> Doc:
    p = _Planter(g)
    text = "\n".join([
        "[distutils]",
        "index-servers = pypi",
        "",
        "[pypi]",
        "username = __token__",
        f"password = {p('pypi_token', g.pypi_token())}",
        "",
        "# .npmrc",
        f"//registry.npmjs.org/:_authToken={p('npm_token', g.npm_token())}",
        "",
        "[tool.deploy]",
        f"region = \"eu-west-{g.r.randint(1, 3)}\"",
        f"api_token = \"{p('generic_api_key', g.generic_key())}\"",
    ])
    return Doc("pypirc / npmrc / toml", text + "\n", p.secrets)


def _doc_terraform(g: _Gen) -> Doc:
    p = _Planter(g)
    text = "\n".join([
        'provider "azurerm" {',
        "  features {}",
        f"  subscription_id = \"{g.uuid()}\"",
        f"  client_id       = \"{g.uuid()}\"",
        f"  client_secret   = \"{p('azure_client_secret', g.azure_client_secret())}\"",
        f"  tenant_id       = \"{g.uuid()}\"",
        "}",
        'provider "aws" {',
        f"  access_key = \"{p('aws_access_key_id', g.aws_key_id())}\"",
        f"  secret_key = \"{p('aws_secret_access_key', g.aws_secret())}\"",
        "}",
        f'resource "aws_db_instance" "{g.word()}" {{',
        f"  username = \"{g.name()}\"",
        f"  password = \"{p('password_assignment', g.password())}\"",
        "}",
    ])
    return Doc("terraform", text + "\n", p.secrets)


def _doc_agent_output(g: _Gen) -> Doc:
    """A tool result as a coding agent sees it: cat of a config with line numbers."""
    p = _Planter(g)
    rows = [
        "import { defineConfig } from 'vite';",
        f"const GOOGLE_OAUTH_REFRESH = '{p('google_oauth', '1//0' + g.mixed(B64URL, 80))}';",
        f"const HF = \"{p('huggingface_token', g.hf_token())}\";",
        f"const SESSION = \"{p('jwt', g.jwt())}\";",
        "export default defineConfig({ plugins: [] });",
        f"// {g.words(8)}",
        f"const GITHUB = '{p('github_token', g.github_token())}';",
    ]
    text = "\n".join(f"{i:6d}\u2192{r}" for i, r in enumerate(rows, 1))
    return Doc("agent tool result", text + "\n", p.secrets)


_PLANTED_DOCS = (_doc_env, _doc_python_settings, _doc_js_config, _doc_yaml, _doc_json_config,
                 _doc_gcp_service_account, _doc_shell_log, _doc_stack_trace, _doc_http, _doc_docs, _doc_pem,
                 _doc_toml, _doc_terraform, _doc_agent_output)


def planted_corpus(seed: int = 20260101, n_docs: int = 140) -> list[Doc]:
    """Documents with planted secrets (about 5 per document)."""
    g = _Gen(seed)
    return [_PLANTED_DOCS[i % len(_PLANTED_DOCS)](g) for i in range(n_docs)]


# --- clean documents -----------------------------------------------------------------


def _clean_python(g: _Gen) -> str:
    cls = g.pascal(2)
    out = [f'"""{g.words(8).capitalize()}."""', "", "from __future__ import annotations", "",
           "import hashlib", "import os", "", f"API_KEY = os.environ[\"{g.snake(2).upper()}_API_KEY\"]",
           "DB_PASSWORD = os.getenv(\"DB_PASSWORD\")", "", "", f"class {cls}:"]
    out.append("    def __init__(self, username: str, password: str, token: str | None = None):")
    out.append("        self.username = username")
    out.append("        self.password_hash = hashlib.sha256(password.encode()).hexdigest()")
    out.append("        self.token = token")
    for _ in range(g.r.randint(3, 8)):
        out.append("")
        out.append(f"    def {g.snake(3)}(self, {g.snake(2)}: int = {g.r.randint(0, 100)}) -> dict:")
        out.append(f"        \"\"\"{g.words(10).capitalize()}.\"\"\"")
        out.append(f"        {g.snake(2)} = self.{g.snake(2)}({g.snake(2)}, max_tokens=4096, token_type=\"bearer\")")
        out.append("        if not self.token:")
        out.append(f"            raise ValueError(\"{g.words(6)}\")")
        out.append(f"        return {{\"{g.word()}\": {g.snake(2)}, \"password\": None, \"tokenizer\": \"o200k_base\"}}")
    out.append("")
    out.append("def login(username, password=None, *, session=None):")
    out.append("    return session.post(url, auth=(username, password), headers={{\"Authorization\": f\"Bearer {{token}}\"}})")
    return "\n".join(out)


def _clean_ts(g: _Gen) -> str:
    comp = g.pascal(2)
    return "\n".join([
        "import React, { useState } from 'react';",
        f"import {{ {g.pascal(2)}, {g.pascal(2)} }} from '@/components/{g.word()}';",
        "",
        f"interface {comp}Props {{",
        "  username: string;",
        "  password: string;",
        "  apiKey?: string;",
        "  onSubmit: (token: string) => void;",
        "}",
        "",
        f"export function {comp}({{ username, password, onSubmit }}: {comp}Props) {{",
        "  const [token, setToken] = useState<string | null>(null);",
        f"  const {g.camel(4)} = useMemo(() => {g.camel(2)}(username), [username]);",
        "  const headers = { Authorization: `Bearer ${token}` };",
        "  passwordField.current?.focus();",
        f"  return <form className=\"{g.word()}-{g.word()} flex gap-2\" onSubmit={{() => onSubmit(token!)}} />;",
        "}",
    ])


def _clean_lockfile(g: _Gen) -> str:
    out = ["{", '  "name": "' + g.word() + '",', '  "lockfileVersion": 3,', '  "packages": {']
    for _ in range(g.r.randint(5, 12)):
        name = f"{g.word()}-{g.word()}"
        ver = f"{g.r.randint(0, 9)}.{g.r.randint(0, 30)}.{g.r.randint(0, 20)}"
        out.append(f'    "node_modules/{name}": {{')
        out.append(f'      "version": "{ver}",')
        out.append(f'      "resolved": "https://registry.npmjs.org/{name}/-/{name}-{ver}.tgz",')
        out.append(f'      "integrity": "sha512-{g.b64bytes(64)}",')
        out.append('      "dev": true')
        out.append("    },")
    out.append("  }")
    out.append("}")
    return "\n".join(out)


def _clean_yarn_go(g: _Gen) -> str:
    out = []
    for _ in range(g.r.randint(3, 8)):
        name = f"{g.word()}-{g.word()}"
        out.append(f'"{name}@^1.2.0":')
        out.append(f'  version "1.{g.r.randint(0, 9)}.{g.r.randint(0, 9)}"')
        out.append(f'  resolved "https://registry.yarnpkg.com/{name}/-/{name}-1.2.3.tgz#{g.sha(40)}"')
        out.append(f'  integrity sha1-{g.b64bytes(20)}')
    for _ in range(g.r.randint(3, 8)):
        mod = f"github.com/{g.word()}/{g.word()}"
        out.append(f"{mod} v0.{g.r.randint(0, 20)}.{g.r.randint(0, 9)} h1:{g.b64bytes(32)}")
        out.append(f"{mod} v0.{g.r.randint(0, 20)}.{g.r.randint(0, 9)}/go.mod h1:{g.b64bytes(32)}")
    out.append(f'checksum = "{g.sha(64)}"')
    out.append(f"--hash=sha256:{g.sha(64)}")
    return "\n".join(out)


def _clean_git_log(g: _Gen) -> str:
    out = []
    for _ in range(g.r.randint(2, 5)):
        out.append(f"commit {g.sha(40)}")
        out.append(f"Author: {g.name().capitalize()} {g.name().capitalize()} <{g.name()}@example.com>")
        out.append(f"Date:   Mon Mar {g.r.randint(1, 28)} 10:{g.r.randint(10, 59)}:00 2025 +0100")
        out.append("")
        out.append(f"    {g.words(7).capitalize()}")
        out.append("")
    out.append(f"diff --git a/{g.path()} b/{g.path()}")
    out.append(f"index {g.sha(7)}..{g.sha(7)} 100644")
    out.append(f"@@ -{g.r.randint(1, 200)},7 +{g.r.randint(1, 200)},8 @@ def {g.snake(2)}():")
    out.append(f"-    {g.snake(2)} = {g.snake(2)}()")
    out.append(f"+    {g.snake(2)} = {g.snake(2)}(retry=3)")
    return "\n".join(out)


def _clean_docker(g: _Gen) -> str:
    out = [f"$ docker pull {g.word()}/{g.word()}:latest", "latest: Pulling from library/" + g.word()]
    for _ in range(g.r.randint(3, 6)):
        out.append(f"{g.sha(12)}: Pull complete")
    out.append(f"Digest: sha256:{g.sha(64)}")
    out.append(f"Status: Downloaded newer image for {g.word()}:latest")
    out.append(f" => [internal] load metadata for docker.io/library/python:3.11-slim  {g.r.random():.1f}s")
    out.append(" => CACHED [2/6] WORKDIR /app  0.0s")
    out.append(f" => exporting to image  sha256:{g.sha(64)}")
    return "\n".join(out)


def _clean_json_api(g: _Gen) -> str:
    items = []
    for _ in range(g.r.randint(3, 8)):
        items.append({
            "id": g.uuid(), "createdAt": g.iso(), "name": g.words(2), "owner": {"id": g.uuid(), "login": g.name()},
            "etag": g.sha(32), "revision": g.sha(40), "tags": [g.word() for _ in range(3)],
            "url": f"https://{g.host()}/api/v2/{g.word()}/{g.uuid()}?include={g.word()}&page={g.r.randint(1, 9)}",
            "message_id": "msg_01" + g.s(B62, 22), "tool_use_id": "toolu_01" + g.s(B62, 22),
            "request_id": "req_011C" + g.s(B62, 20), "tokens": {"input": g.r.randint(1, 9999), "output": 12},
        })
    return json.dumps({"data": items, "next_cursor": None, "token_type": "bearer"}, indent=2)


def _clean_pytest(g: _Gen) -> str:
    out = ["============================= test session starts ==============================",
           "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0",
           f"rootdir: /home/runner/work/{g.word()}/{g.word()}", "collected 142 items", ""]
    for _ in range(g.r.randint(4, 9)):
        out.append(f"tests/test_{g.snake(2)}.py ........F...s....                             [ {g.r.randint(1, 99)}%]")
    out.append("")
    out.append(f"___________________________ test_{g.snake(3)} ___________________________")
    out.append(f"    def test_{g.snake(3)}():")
    out.append(f">       assert {g.snake(2)}(password=\"\") is None")
    out.append(f"E       AssertionError: assert <{g.pascal(2)} object at 0x7f{g.sha(10)}> is None")
    out.append(f"tests/test_{g.word()}.py:{g.r.randint(10, 300)}: AssertionError")
    out.append("=========================== short test summary info ============================")
    out.append(f"FAILED tests/test_{g.word()}.py::test_{g.snake(3)} - AssertionError")
    return "\n".join(out)


def _clean_minified(g: _Gen) -> str:
    parts = []
    for _ in range(g.r.randint(30, 80)):
        a, b, c = (g.s(string.ascii_letters, g.r.randint(1, 2)) for _ in range(3))
        parts.append(g.r.choice([
            f"function {a}({b},{c}){{return {b}.{g.word()}({c})}}",
            f"var {a}={b}&&{b}.{g.camel(2)}||{{}};",
            f"{a}.prototype.{g.camel(2)}=function(){{return this.{g.word()}}};",
            f"if(!{a}){{throw new Error(\"{g.words(3)}\")}}",
            f"{a}[\"{g.camel(3)}\"]={b}.{g.camel(2)}({c},{g.r.randint(0, 999)});",
        ]))
    return "".join(parts) + f"\n//# sourceMappingURL={g.word()}.{g.sha(8)}.js.map"


def _clean_html_css(g: _Gen) -> str:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(g.r.getrandbits(8) for _ in range(300))).decode()
    return "\n".join([
        f".{g.word()}-{g.word()} {{ display: flex; color: #{g.sha(6)}; background: url(data:image/png;base64,{png}); }}",
        f"<img alt=\"{g.words(2)}\" src=\"data:image/png;base64,{png}\" />",
        f"<link rel=\"stylesheet\" href=\"/assets/index-{g.sha(8)}.css\" integrity=\"sha384-{g.b64bytes(48)}\" />",
        f"<script src=\"/assets/{g.word()}.{g.sha(20)}.js\"></script>",
        f"@font-face {{ font-family: '{g.pascal(1)}'; src: url('/fonts/{g.word()}-{g.sha(8)}.woff2'); }}",
    ])


def _clean_sql(g: _Gen) -> str:
    t = g.snake(2)
    return "\n".join([
        f"CREATE TABLE {t} (",
        "  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),",
        "  email TEXT NOT NULL UNIQUE,",
        "  password_hash TEXT NOT NULL,",
        "  api_token_hash TEXT,",
        "  created_at TIMESTAMPTZ NOT NULL DEFAULT now()",
        ");",
        f"INSERT INTO {t} (id, email, password_hash) VALUES ('{g.uuid()}', '{g.name()}@example.org', '$2b$12$' || '{g.sha(20)}');",
        f"CREATE INDEX idx_{t}_created ON {t} (created_at);",
    ])


def _clean_k8s(g: _Gen) -> str:
    return "\n".join([
        "apiVersion: apps/v1", "kind: Deployment", "metadata:", f"  name: {g.word()}-{g.word()}",
        "spec:", "  template:", "    spec:", "      containers:", f"        - name: {g.word()}",
        f"          image: ghcr.io/{g.name()}/{g.word()}@sha256:{g.sha(64)}", "          env:",
        "            - name: DB_PASSWORD", "              valueFrom:", "                secretKeyRef:",
        f"                  name: {g.word()}-secrets", "                  key: password",
        "            - name: API_TOKEN", "              value: ${{ secrets.API_TOKEN }}",
        "            - name: DATABASE_URL", "              value: postgres://app:${DB_PASSWORD}@db:5432/app",
        "      secret_name: app-secrets",
        "      password: \"\"",
    ])


def _clean_prose(g: _Gen) -> str:
    out = [f"# {g.pascal(3)}", ""]
    for _ in range(g.r.randint(2, 5)):
        out.append(" ".join(g.words(g.r.randint(8, 16)).capitalize() + "." for _ in range(g.r.randint(2, 5))))
        out.append("")
    out.append(f"See `{g.path()}` and https://{g.host()}/docs/{g.word()}#{g.word()} for the {g.words(3)}.")
    out.append(f"The token budget is 200k tokens; set `max_tokens` and the password policy in `{g.snake(2)}.yaml`.")
    out.append("Use `export API_KEY=<your key>` or `password: ${{DB_PASSWORD}}`; never commit secrets.")
    return "\n".join(out)


def _clean_listing(g: _Gen) -> str:
    out = [f"total {g.r.randint(10, 999)}"]
    for _ in range(g.r.randint(5, 15)):
        out.append(f"-rw-r--r--  1 {g.name()}  staff  {g.r.randint(100, 99999):6d} Mar {g.r.randint(1, 28):2d} 10:{g.r.randint(10, 59)} "
                   f"{g.snake(g.r.randint(2, 4))}.{g.r.choice(['py', 'ts', 'md', 'json'])}")
    out.append(f"src/{g.camel(5)}/{g.pascal(4)}Controller.{g.sha(8)}.ts")
    out.append(f"{g.pascal(6)}{g.r.randint(1, 9)}{g.pascal(3)}ById")
    out.append(f"{g.snake(7)}")
    out.append(f"{g.uuid()}  {g.uuid().upper()}  {g.sha(64)}")
    return "\n".join(out)


_CLEAN_DOCS = (_clean_python, _clean_ts, _clean_lockfile, _clean_yarn_go, _clean_git_log, _clean_docker,
               _clean_json_api, _clean_pytest, _clean_minified, _clean_html_css, _clean_sql, _clean_k8s,
               _clean_prose, _clean_listing)


def clean_corpus(seed: int = 20260102, target_bytes: int = 3_000_000) -> list[str]:
    """Realistic code/config/log texts without secrets, about ``target_bytes`` in total."""
    g = _Gen(seed)
    out: list[str] = []
    size = 0
    i = 0
    while size < target_bytes:
        t = _CLEAN_DOCS[i % len(_CLEAN_DOCS)](g) + "\n"
        out.append(t)
        size += len(t.encode())
        i += 1
    return out
