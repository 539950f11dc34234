"""Hospital blood bank: donors, blood units by type and component, transfusion requests, crossmatch and issue."""

from __future__ import annotations

from typing import Any, Literal

from envsim.envs import Environment, ToolError, tool
from envsim.envs.sampling import Sampler, add_days

from envsim.envs.validation import require_record, require_status

TYPES = ["O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+"]
COMPONENTS = {"RBC": 42, "plasma": 365, "platelets": 5}  # shelf life in days
DEFERRAL_DAYS = 56


def compatible(donor: str, recipient: str) -> bool:
    """Red-cell ABO/Rh compatibility of a donor unit with a recipient type."""
    abo_ok = donor[:-1] == "O" or donor[:-1] == recipient[:-1] or recipient[:-1] == "AB"
    rh_ok = donor[-1] == "-" or recipient[-1] == "+"
    return abo_ok and rh_ok


def _link_sampled_units(units: dict[str, Any], requests: dict[str, Any], stock: dict[str, int], issued_on: str) -> None:
    """Make a sampled state consistent: every reserved unit belongs to an open request and every issued unit
    to a fulfilled one (of its type and component); units without a request go back to stock, fulfilled
    requests hold exactly their issued units, and a fulfilled request without units becomes cancelled."""
    for unit_status, request_status in (("reserved", "open"), ("issued", "fulfilled")):
        for uid, unit in units.items():
            if unit["status"] != unit_status:
                continue
            target = next((rid for rid, req in requests.items() if req["status"] == request_status
                           and len(req["units"]) < req["units_needed"]
                           and (not req["units"] or (req["blood_type"], req["component"])
                                == (unit["blood_type"], unit["component"]))), None)
            if target is None:
                unit["status"] = "available"
                stock[unit["blood_type"]] += 1
                continue
            req = requests[target]
            if not req["units"]:
                req["blood_type"], req["component"] = unit["blood_type"], unit["component"]
            req["units"].append(uid)
            unit["request_id"] = target
    for req in requests.values():
        if req["status"] == "fulfilled":
            if req["units"]:
                req["units_needed"], req["issued_on"] = len(req["units"]), issued_on
            else:
                req["status"] = "cancelled"

class BloodBank(Environment):
    """A hospital blood bank that collects donations, stores units, crossmatches them to requests and issues them.

    Units go available -> reserved -> issued, or are discarded when expired; an inventory count per type is kept.
    """

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        s = Sampler(seed)
        donors = {did: {"name": s.person_name(), "blood_type": s.weighted(dict(zip(TYPES, [7, 37, 6, 34, 2, 9, 1, 4]))),
                        "donations": s.int(0, 40), "eligible_on": s.date("2026-01-01", "2026-05-30")}
                  for did in s.ids("DN", s.int(10, 16))}
        units, stock = {}, {t: 0 for t in TYPES}
        for uid in s.ids("U", s.int(20, 32), start=88000, width=5):
            comp = s.weighted({"RBC": 6, "plasma": 2, "platelets": 2})
            btype = donors[s.choice(list(donors))]["blood_type"]
            drawn = s.date("2026-02-20", "2026-04-08")
            status = s.weighted({"available": 7, "reserved": 1, "issued": 1})
            units[uid] = {"blood_type": btype, "component": comp, "collected": drawn,
                          "expires": add_days(drawn, COMPONENTS[comp]), "status": status, "request_id": None}
            if status == "available":
                stock[btype] += 1
        requests = {}
        for rid in s.ids("REQ", s.int(8, 12), start=300):
            requests[rid] = {"patient": s.person_name(), "blood_type": s.choice(TYPES), "component": s.weighted({"RBC": 5, "plasma": 1, "platelets": 1}),
                             "units_needed": s.int(1, 4), "units": [], "status": s.weighted({"open": 4, "fulfilled": 1, "cancelled": 1}),
                             "urgency": s.choice(["routine", "urgent", "emergency"])}
        _link_sampled_units(units, requests, stock, issued_on="2026-04-09")
        return {"today": "2026-04-10", "donors": donors, "units": units, "requests": requests,
                "available_by_type": stock, "next_unit_number": 88100, "discard_log": []}

    @tool
    def inventory(self) -> dict[str, Any]:
        """Count of available units per blood type."""
        return {"success": True, "available_by_type": self.available_by_type}

    @tool
    def get_request(self, request_id: str) -> dict[str, Any]:
        """Get a transfusion request with the units assigned to it.

        Args:
            request_id: Request id, e.g. "REQ-302".
        """
        return {"success": True, "request": require_record(self.requests, request_id, "Request")}

    @tool
    def compatible_units(self, request_id: str, include_expired: bool = False) -> dict[str, Any]:
        """List available units compatible with a request's blood type and component.

        Args:
            request_id: Request to match.
            include_expired: Also list units past their expiry date.
        """
        req = require_record(self.requests, request_id, "Request")
        found = [uid for uid, u in self.units.items() if u["status"] == "available" and u["component"] == req["component"]
                 and compatible(u["blood_type"], req["blood_type"]) and (include_expired or u["expires"] >= self.today)]
        return {"success": True, "units": found}

    @tool(write=True)
    def record_donation(self, donor_id: str, component: Literal["RBC", "plasma", "platelets"]) -> dict[str, Any]:
        """Record a donation from an eligible donor: new unit, donor deferral, inventory count.

        Args:
            donor_id: Donor giving blood.
            component: Component collected.
        """
        donor = require_record(self.donors, donor_id, "Donor")
        if donor["eligible_on"] > self.today:
            raise ToolError(f"Donor {donor_id} is deferred until {donor['eligible_on']}")
        uid = f"U-{self.next_unit_number}"
        self.next_unit_number += 1
        self.units[uid] = {"blood_type": donor["blood_type"], "component": component, "collected": self.today,
                           "expires": add_days(self.today, COMPONENTS[component]), "status": "available", "request_id": None}
        donor["donations"] += 1
        donor["eligible_on"] = add_days(self.today, DEFERRAL_DAYS if component == "RBC" else 14)
        self.available_by_type[donor["blood_type"]] += 1
        return {"success": True, "unit_id": uid}

    @tool(write=True)
    def crossmatch_and_reserve(self, request_id: str) -> dict[str, Any]:
        """Reserve compatible, unexpired units for an open request, oldest-expiring first, up to the units needed.

        Args:
            request_id: Open request.
        """
        req = require_record(self.requests, request_id, "Request")
        require_status(req, ("open",), f"Request {request_id}", "crossmatch")
        missing = req["units_needed"] - len(req["units"])
        if missing <= 0:
            raise ToolError(f"Request {request_id} already has all units reserved")
        cands = [uid for uid, u in self.units.items() if u["status"] == "available" and u["component"] == req["component"]
                 and compatible(u["blood_type"], req["blood_type"]) and u["expires"] >= self.today]
        cands.sort(key=lambda uid: self.units[uid]["expires"])
        if not cands:
            raise ToolError(f"No compatible {req['component']} units for {req['blood_type']}")
        picked = cands[:missing]
        for uid in picked:
            unit = self.units[uid]
            unit["status"], unit["request_id"] = "reserved", request_id
            self.available_by_type[unit["blood_type"]] -= 1
            req["units"].append(uid)
        return {"success": True, "reserved": picked, "still_missing": missing - len(picked)}

    @tool(write=True)
    def issue_request(self, request_id: str) -> dict[str, Any]:
        """Issue every reserved unit of a fully reserved request to the ward and mark it fulfilled.

        Args:
            request_id: Open request with all units reserved.
        """
        req = require_record(self.requests, request_id, "Request")
        require_status(req, ("open",), f"Request {request_id}", "issue")
        if len(req["units"]) < req["units_needed"]:
            raise ToolError(f"Request {request_id} has {len(req['units'])} of {req['units_needed']} units reserved")
        for uid in req["units"]:
            self.units[uid]["status"] = "issued"
        req["status"] = "fulfilled"
        req["issued_on"] = self.today
        return {"success": True, "units": req["units"]}

    @tool(write=True)
    def cancel_request(self, request_id: str) -> dict[str, Any]:
        """Cancel an open request and return its reserved units to available stock.

        Args:
            request_id: Open request.
        """
        req = require_record(self.requests, request_id, "Request")
        require_status(req, ("open",), f"Request {request_id}", "cancel")
        for uid in req["units"]:
            unit = self.units[uid]
            unit["status"], unit["request_id"] = "available", None
            self.available_by_type[unit["blood_type"]] += 1
        released = list(req["units"])
        req["units"] = []
        req["status"] = "cancelled"
        return {"success": True, "released": released}

    @tool(write=True)
    def discard_expired(self) -> dict[str, Any]:
        """Discard every available unit past its expiry date, updating inventory counts and the discard log."""
        gone = []
        for uid, unit in self.units.items():
            if unit["status"] == "available" and unit["expires"] < self.today:
                unit["status"] = "discarded"
                self.available_by_type[unit["blood_type"]] -= 1
                gone.append(uid)
        if gone:
            self.discard_log.append({"date": self.today, "units": gone, "reason": "expired"})
        return {"success": True, "discarded": gone}
