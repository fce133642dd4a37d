"""Create the failed-documents Automation (automation-failed-documents.yaml) on a Prefect server.

    export PREFECT_API_URL=http://127.0.0.1:4200/api
    .venv/bin/python deploy/automation.py --webhook URL     # makes a webhook notification block
    .venv/bin/python deploy/automation.py --block-id ID     # or uses a notification block you made

Prints the automation's id. Nothing in citeline imports this file.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import yaml

DEFINITION = Path(__file__).with_name("automation-failed-documents.yaml")
BLOCK_NAME = "citeline-failed-documents"


def webhook_block(url: str) -> str:
    """A webhook notification block posting {"subject", "body"} as JSON to ``url``; its id."""
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    block = CustomWebhookNotificationBlock(name=BLOCK_NAME, url=url,
                                           json_data={"subject": "{{subject}}", "body": "{{body}}"})
    return str(block.save(BLOCK_NAME, overwrite=True))


def create(block_id: str) -> str:
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.automations import AutomationCore

    definition = yaml.safe_load(DEFINITION.read_text())
    for action in definition["actions"]:
        action["block_document_id"] = block_id
    with get_client(sync_client=True) as client:
        return str(client.create_automation(AutomationCore.model_validate(definition)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--webhook", help="URL to POST each notification to (Slack-style webhooks work)")
    where.add_argument("--block-id", help="id of an existing notification block")
    args = parser.parse_args()
    print(create(args.block_id or webhook_block(args.webhook)))


if __name__ == "__main__":
    main()
