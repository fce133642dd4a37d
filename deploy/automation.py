"""Create citeline's Prefect Automations (every definition in deploy/automations/) on a server.

    export PREFECT_API_URL=http://127.0.0.1:4200/api
    .venv/bin/python deploy/automation.py --webhook URL     # makes a webhook notification block
    .venv/bin/python deploy/automation.py --block-id ID     # or uses a notification block you made

One command creates them all: failed documents, failed or crashed runs, late runs, the work
pool without a worker (notifications), and silent runs marked Crashed (zombie-runs). Run again,
it replaces the automations it made before (matched by name) instead of adding copies. Prints
each automation's name and id. Nothing in citeline imports this file.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import yaml

DEFINITIONS = Path(__file__).with_name("automations")
BLOCK_NAME = "citeline-notifications"


def webhook_block(url: str) -> str:
    """A webhook notification block posting {"subject", "body"} as JSON to ``url``; its id."""
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    block = CustomWebhookNotificationBlock(name=BLOCK_NAME, url=url,
                                           json_data={"subject": "{{subject}}", "body": "{{body}}"})
    return str(block.save(BLOCK_NAME, overwrite=True))


def definitions(block_id: str) -> list[dict]:
    """Each automation of deploy/automations/, its notifications sent through ``block_id``."""
    found = []
    for path in sorted(DEFINITIONS.glob("*.yaml")):
        definition = yaml.safe_load(path.read_text())
        for action in definition["actions"]:
            if action["type"] == "send-notification":
                action["block_document_id"] = block_id
        found.append(definition)
    return found


def create(block_id: str) -> dict[str, str]:
    """Create (or replace) every automation; their ids by name."""
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.automations import AutomationCore

    made = {}
    with get_client(sync_client=True) as client:
        for definition in definitions(block_id):
            for old in client.read_automations_by_name(definition["name"]):
                client.delete_automation(old.id)
            made[definition["name"]] = str(client.create_automation(AutomationCore.model_validate(definition)))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--webhook", help="URL to POST each notification to (Slack-style webhooks work)")
    where.add_argument("--block-id", help="id of an existing notification block")
    args = parser.parse_args()
    for name, automation_id in create(args.block_id or webhook_block(args.webhook)).items():
        print(f"{name} {automation_id}")


if __name__ == "__main__":
    main()
