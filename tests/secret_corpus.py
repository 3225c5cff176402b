"""A corpus of secret formats for the redaction tests, built at run time from a seeded generator: no key-shaped
literal sits in the repository (push protection and secret scanners stay quiet), and every run plants the same
values.

`FORMATS` lists each format once: `text` is how it shows up in a transcript (with its surroundings: a header, an
assignment, a URL, a PEM block), `leaks` are the substrings that must never survive redaction (the secret, or its
distinctive parts). `PLACES` says where a transcript can carry a string, and `home_paths()` the home folders a
transcript mentions (not secrets: `skillgit.sleep.scrub` masks them).
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

_RNG = random.Random(20260101)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class Planted:
    name: str
    text: str
    leaks: tuple[str, ...]


def _pem(kind: str, lines: int = 6, escaped: bool = False) -> tuple[str, tuple[str, ...]]:
    body = [rand(64, B64) for _ in range(lines)]
    nl = "\\n" if escaped else "\n"
    block = f"-----BEGIN {kind}-----{nl}" + nl.join(body) + f"{nl}-----END {kind}-----"
    return block, tuple(line[8:40] for line in body)


def _formats() -> list[Planted]:
    out: list[Planted] = []

    def add(name: str, text: str, *leaks: str) -> None:
        out.append(Planted(name, text, leaks))

    k = "sk-proj-" + rand(74, ALNUM + "_-") + "T3BlbkFJ" + rand(74, ALNUM + "_-")
    add("openai-project-key", f"OPENAI_API_KEY={k}", k[8:60])
    k = "sk-" + rand(20) + "T3BlbkFJ" + rand(20)
    add("openai-legacy-key", f"client = OpenAI(api_key='{k}')", k[3:])
    k = "sk-ant-api03-" + rand(93, ALNUM + "_-") + "AA"
    add("anthropic-key", f"export ANTHROPIC_API_KEY={k}", k[13:60])
    k = "AKIA" + rand(16, string.ascii_uppercase + "234567")
    add("aws-access-key-id", f"aws configure set aws_access_key_id {k}", k)
    k = "ASIA" + rand(16, string.ascii_uppercase + "234567")
    add("aws-sts-key-id", f'"AccessKeyId": "{k}",', k)
    k = rand(40, B64)
    add("aws-secret-access-key", f"aws_secret_access_key = {k}", k)
    block, parts = _pem("OPENSSH PRIVATE KEY")
    add("openssh-private-key", f"cat ~/.ssh/id_ed25519\n{block}\n", *parts)
    block, parts = _pem("RSA PRIVATE KEY", 10)
    add("rsa-private-key", f"openssl genrsa 2048 wrote server.key:\n{block}", *parts)
    block, parts = _pem("EC PRIVATE KEY", 3)
    add("ec-private-key", f"key.pem:\n{block}", *parts)
    block, parts = _pem("PGP PRIVATE KEY BLOCK", 5)
    add("pgp-private-key", block, *parts)
    block, parts = _pem("ENCRYPTED PRIVATE KEY", 5)
    add("pkcs8-encrypted-key", block[:-30], *parts[:-1])  # cut off before its END line, as a truncated output is
    block, parts = _pem("PRIVATE KEY", 4, escaped=True)
    add("gcp-service-account-json", '{"type": "service_account", "private_key_id": "' + rand(40, HEX)
        + f'", "private_key": "{block}\\n", "client_email": "ci@proj.iam.gserviceaccount.com"}}', *parts)
    k = "ghp_" + rand(36)
    add("github-pat", f"git clone https://{k}@github.com/acme/app.git", k[4:])
    k = "github_pat_" + rand(22) + "_" + rand(59)
    add("github-fine-grained-pat", f"GH_TOKEN={k} gh pr list", k[11:])
    k = "gho_" + rand(36)
    add("github-oauth", f"oauth_token: {k}", k[4:])
    k = "glpat-" + rand(20, ALNUM + "_-")
    add("gitlab-pat", f"curl --header 'PRIVATE-TOKEN: {k}' https://gitlab.example.com/api/v4/projects", k[6:])
    k = f"xoxb-{rand(12, string.digits)}-{rand(13, string.digits)}-{rand(24)}"
    add("slack-bot-token", f"SLACK_BOT_TOKEN={k}", k[5:])
    k = f"T{rand(8, string.ascii_uppercase + string.digits)}/B{rand(8, string.ascii_uppercase)}/{rand(24)}"
    add("slack-webhook", f"post to https://hooks.slack.com/services/{k}", k.rsplit("/", 1)[1])
    k = "sk_live_" + rand(24)
    add("stripe-live-key", f"stripe.api_key = '{k}'", k[8:])
    k = "AIza" + rand(35, ALNUM + "_-")
    add("google-api-key", f"https://maps.googleapis.com/maps/api/geocode/json?key={k}", k)
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = base64.urlsafe_b64encode(f'{{"sub":"{rand(10)}","name":"dev"}}'.encode()).decode().rstrip("=")
    k = f"{head}.{body}.{rand(43, ALNUM + '_-')}"
    add("jwt", f"session cookie: {k}", body, k.rsplit(".", 1)[1])
    k = rand(40, ALNUM + "._-")
    add("bearer-header", f"-H 'Authorization: Bearer {k}'", k)
    k = rand(40, HEX)
    add("token-scheme", f"Authorization: token {k}", k)
    k = base64.b64encode(f"deploy:{rand(14)}".encode()).decode()
    add("basic-auth-header", f'headers = {{"Authorization": "Basic {k}"}}', k)
    k = rand(16)
    add("url-password", f"DATABASE_URL=postgres://app:{k}@db.internal:5432/app", k)
    k = "npm_" + rand(36)
    add("npm-token", f"//registry.npmjs.org/:_authToken={k}", k[4:])
    k = "pypi-AgEIcHlwaS5vcmc" + rand(70, ALNUM + "_-")
    add("pypi-token", f"twine upload -p {k} dist/*", k[20:])
    k = "hf_" + rand(34, string.ascii_letters)
    add("huggingface-token", f"huggingface-cli login --token {k}", k[3:])
    k = "SG." + rand(22, ALNUM + "_-") + "." + rand(43, ALNUM + "_-")
    add("sendgrid-key", f"SENDGRID_API_KEY='{k}'", k[3:])
    k = "SK" + rand(32, HEX)
    add("twilio-api-key", f"twilio api:core:keys:list  # {k}", k)
    k = rand(86, B64) + "=="
    add("azure-storage-key", f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={k};EndpointSuffix=core"
        ".windows.net", k[:60])
    k = rand(18, ALNUM + "!#%")
    add("password-assignment", f"DB_PASSWORD={k}", k)
    k = rand(32, ALNUM + "-_")
    add("json-client-secret", f'{{"client_id": "app", "client_secret": "{k}"}}', k)
    k = rand(32)
    add("json-escaped-api-key", f'{{\\"service\\": \\"geo\\", \\"api_key\\": \\"{k}\\"}}', k)
    k = rand(20)
    add("cli-password-flag", f"mysql --password {k} -h db.internal", k)
    k = rand(32)
    add("high-entropy-assignment", f"deploy_token_value = {k}", k)
    k = "dapi" + rand(32, HEX)
    add("databricks-token", f"databricks configure --token {k}", k[4:])
    k = "dop_v1_" + rand(64, HEX)
    add("digitalocean-token", f"doctl auth init -t {k}", k[7:])
    k = "shpat_" + rand(32, HEX)
    add("shopify-token", f"X-Shopify-Access-Token: {k}", k[6:])
    k = "hvs." + rand(95, ALNUM + "_-")
    add("vault-token", f"VAULT_TOKEN={k} vault kv get secret/app", k[4:])
    k = "AGE-SECRET-KEY-1" + rand(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
    add("age-secret-key", f"# {k}", k[16:])
    k = "dp.pt." + rand(43)
    add("doppler-token", f"doppler configure set token {k}", k[6:])
    return out


FORMATS: tuple[Planted, ...] = tuple(_formats())
# where a transcript carries text: what a person typed, what the agent ran and wrote, what came back
PLACES = ("user text", "tool input", "tool result", "file path", "command")
# values only an environment or a .env knows: no shape gives them away
ENV_SECRET = ("CORPUS_SERVICE_TOKEN", "zz-" + rand(24, string.ascii_lowercase + string.digits))
DOTENV_SECRET = ("WAREHOUSE_LOGIN", "wh-" + rand(22, string.ascii_lowercase + string.digits))
EMAIL = "dana.fischer@" + "example.org"


def path_safe(text: str) -> str:
    """A one-line secret as it can appear in a file name (any character but the separator)."""
    return text.replace("/", "_").replace("\\", "_")


def all_leaks() -> list[tuple[str, str]]:
    """(format name, substring) for every substring that must never survive redaction."""
    return [(p.name, leak) for p in FORMATS for leak in p.leaks]
