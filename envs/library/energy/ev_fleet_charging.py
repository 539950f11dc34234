"""Electric vehicle fleet depot charging: vehicles, chargers, charging sessions, time-of-use tariffs and depot energy bills."""

from __future__ import annotations

from typing import Any, Literal

from envsim.envs import Environment, ToolError, tool
from envsim.envs.validation import require_range, require_record
from envsim.envs.sampling import Sampler, money

DEPOTS = ["north", "south", "harbor"]
TARIFFS = {"flat": {"peak": 0.24, "offpeak": 0.24}, "tou": {"peak": 0.36, "offpeak": 0.11},
           "fleet_ev": {"peak": 0.29, "offpeak": 0.09}}
PEAK_HOURS = list(range(16, 21))
RAMP_LIMIT = 2


class EvFleetCharging(Environment):
    """A fleet charging operator: delivery vans with state of charge at depots, depot chargers, metered charging sessions priced on each depot's time-of-use tariff, and dispatch to routes.

    Ending a session books energy and cost on the session, the vehicle, the charger and the depot bill.
    """

    @classmethod
    def sample_state(cls, seed: int) -> dict[str, Any]:
        s = Sampler(seed)
        vehicles = {}
        for vid in s.ids("EV", s.int(12, 20)):
            vehicles[vid] = {"plate": f"{s.word()[:3].upper()}-{s.int(100, 999)}", "battery_kwh": s.choice([60, 77, 100]),
                             "soc_pct": s.int(8, 95), "depot": s.choice(DEPOTS),
                             "status": s.weighted({"parked": 6, "on_route": 3}), "session_id": None}
        chargers = {}
        for cid in s.ids("CHG", s.int(8, 12)):
            chargers[cid] = {"depot": s.choice(DEPOTS), "max_kw": s.choice([22, 50, 150]),
                             "status": s.weighted({"free": 6, "offline": 1}), "vehicle_id": None}
        sessions = {}
        for sid in s.ids("SES", s.int(2, 5), start=301):
            free = [c for c, ch in chargers.items() if ch["status"] == "free"]
            parked = [v for v, ve in vehicles.items() if ve["status"] == "parked" and ve["soc_pct"] < 80]
            if not free or not parked:
                break
            cid, vid = s.choice(free), s.choice(parked)
            chargers[cid].update({"status": "occupied", "vehicle_id": vid})
            vehicles[vid].update({"status": "charging", "session_id": sid, "depot": chargers[cid]["depot"]})
            sessions[sid] = {"vehicle_id": vid, "charger_id": cid, "start_soc": vehicles[vid]["soc_pct"],
                             "start_hour": s.int(0, 12), "end_soc": None, "kwh": 0.0, "cost": 0.0, "status": "active"}
        depots = {d: {"tariff": s.choice(list(TARIFFS)), "energy_kwh": s.float(200, 3000, 1),
                      "cost": s.money(50, 600)} for d in DEPOTS}
        return {"hour": s.int(6, 22), "tariffs": {k: dict(v) for k, v in TARIFFS.items()}, "depots": depots,
                "vehicles": vehicles, "chargers": chargers, "sessions": sessions,
                "next_session_number": 301 + len(sessions) if sessions else 301}

    def _vehicle(self, vehicle_id: str) -> dict[str, Any]:
        return require_record(self.vehicles, vehicle_id, "Vehicle")

    def _open_session(self, vehicle_id: str, charger_id: str) -> str:
        sid = f"SES-{self.next_session_number:03d}"
        self.next_session_number += 1
        vehicle, charger = self.vehicles[vehicle_id], self.chargers[charger_id]
        charger["status"], charger["vehicle_id"] = "occupied", vehicle_id
        vehicle["status"], vehicle["session_id"] = "charging", sid
        self.sessions[sid] = {"vehicle_id": vehicle_id, "charger_id": charger_id, "start_soc": vehicle["soc_pct"],
                              "start_hour": self.hour, "end_soc": None, "kwh": 0.0, "cost": 0.0, "status": "active"}
        return sid

    # read tools ------------------------------------------------------------------------------
    @tool
    def fleet_overview(self) -> dict[str, Any]:
        """Count vehicles by status and list free chargers per depot."""
        by_status: dict[str, int] = {}
        for v in self.vehicles.values():
            by_status[v["status"]] = by_status.get(v["status"], 0) + 1
        free = {d: [cid for cid, c in self.chargers.items() if c["depot"] == d and c["status"] == "free"] for d in DEPOTS}
        return {"success": True, "hour": self.hour, "vehicles_by_status": by_status, "free_chargers": free}

    @tool
    def get_vehicle(self, vehicle_id: str) -> dict[str, Any]:
        """Get one vehicle and its active session, if any.

        Args:
            vehicle_id: Vehicle id, e.g. "EV-007".
        """
        v = self._vehicle(vehicle_id)
        return {"success": True, "vehicle": v, "session": self.sessions.get(v["session_id"]) if v["session_id"] else None}

    # write tools -----------------------------------------------------------------------------
    @tool(write=True)
    def start_session(self, vehicle_id: str, charger_id: str) -> dict[str, Any]:
        """Plug a parked vehicle into a free charger at its depot.

        Args:
            vehicle_id: Vehicle to charge.
            charger_id: Charger to use.
        """
        vehicle = self._vehicle(vehicle_id)
        charger = require_record(self.chargers, charger_id, "Charger")
        if vehicle["status"] != "parked":
            raise ToolError(f"Vehicle {vehicle_id} is {vehicle['status']}, not parked")
        if charger["status"] != "free":
            raise ToolError(f"Charger {charger_id} is {charger['status']}")
        if charger["depot"] != vehicle["depot"]:
            raise ToolError(f"Charger {charger_id} is at depot {charger['depot']}, vehicle is at {vehicle['depot']}")
        if vehicle["soc_pct"] >= 100:
            raise ToolError(f"Vehicle {vehicle_id} is fully charged")
        return {"success": True, "session_id": self._open_session(vehicle_id, charger_id)}

    @tool(write=True)
    def end_session(self, session_id: str, kwh_delivered: float) -> dict[str, Any]:
        """Stop an active session after the metered energy and bill it at the depot's current tariff rate.

        Args:
            session_id: Session to end.
            kwh_delivered: Energy metered by the charger, kWh.
        """
        ses = require_record(self.sessions, session_id, "Session")
        if ses["status"] != "active":
            raise ToolError(f"Session {session_id} is already {ses['status']}")
        vehicle, charger = self.vehicles[ses["vehicle_id"]], self.chargers[ses["charger_id"]]
        room = round((100 - ses["start_soc"]) / 100 * vehicle["battery_kwh"], 1)
        require_range(kwh_delivered, 0.1, room, "Energy delivered")
        depot = self.depots[charger["depot"]]
        kwh = round(kwh_delivered, 1)
        end_soc = min(100, ses["start_soc"] + int(kwh / vehicle["battery_kwh"] * 100))
        rate = self.tariffs[depot["tariff"]]["peak" if self.hour in PEAK_HOURS else "offpeak"]
        cost = money(kwh * rate)
        ses.update({"end_soc": end_soc, "kwh": kwh, "cost": cost, "status": "completed"})
        vehicle.update({"soc_pct": end_soc, "status": "parked", "session_id": None})
        charger.update({"status": "free", "vehicle_id": None})
        depot["energy_kwh"] = round(depot["energy_kwh"] + kwh, 1)
        depot["cost"] = money(depot["cost"] + cost)
        return {"success": True, "kwh": kwh, "rate": rate, "cost": cost}

    @tool(write=True)
    def dispatch_vehicle(self, vehicle_id: str) -> dict[str, Any]:
        """Send a parked vehicle out on its route; it needs at least 50% charge.

        Args:
            vehicle_id: Vehicle leaving the depot.
        """
        vehicle = self._vehicle(vehicle_id)
        if vehicle["status"] != "parked":
            raise ToolError(f"Vehicle {vehicle_id} is {vehicle['status']}; end its session or wait for it to return")
        if vehicle["soc_pct"] < 50:
            raise ToolError(f"Vehicle {vehicle_id} has only {vehicle['soc_pct']}% charge (50% needed)")
        vehicle["status"] = "on_route"
        return {"success": True, "vehicle_id": vehicle_id}

    @tool(write=True)
    def return_vehicle(self, vehicle_id: str, soc_pct: int, depot: Literal["north", "south", "harbor"]) -> dict[str, Any]:
        """Check a vehicle back in from its route at a depot with its remaining charge.

        Args:
            vehicle_id: Returning vehicle.
            soc_pct: Remaining state of charge, percent.
            depot: Depot it returns to.
        """
        vehicle = self._vehicle(vehicle_id)
        if vehicle["status"] != "on_route":
            raise ToolError(f"Vehicle {vehicle_id} is {vehicle['status']}, not on route")
        require_range(soc_pct, 0, vehicle["soc_pct"], "Returned state of charge")
        vehicle.update({"status": "parked", "soc_pct": soc_pct, "depot": depot})
        return {"success": True, "vehicle": vehicle}

    @tool(write=True)
    def smart_charge_depot(self, depot: Literal["north", "south", "harbor"]) -> dict[str, Any]:
        """Plug the depot's parked vehicles below 80% into free chargers, lowest charge first, at most 2 per run (feeder ramp limit).

        Args:
            depot: Depot to schedule.
        """
        waiting = sorted((v for v, ve in self.vehicles.items()
                          if ve["depot"] == depot and ve["status"] == "parked" and ve["soc_pct"] < 80),
                         key=lambda v: self.vehicles[v]["soc_pct"])
        free = [c for c, ch in self.chargers.items() if ch["depot"] == depot and ch["status"] == "free"]
        pairs = list(zip(waiting, free))[:RAMP_LIMIT]
        if not pairs:
            raise ToolError(f"Depot {depot}: {len(waiting)} vehicles waiting, {len(free)} free chargers")
        started = {vid: self._open_session(vid, cid) for vid, cid in pairs}
        return {"success": True, "sessions": started}

    @tool(write=True)
    def advance_clock(self, hours: int) -> dict[str, Any]:
        """Move the depot clock forward (wrapping at midnight); later sessions are billed at the new hour's rate.

        Args:
            hours: Hours to advance, 1 to 12.
        """
        require_range(hours, 1, 12, "Hours")
        self.hour = (self.hour + hours) % 24
        return {"success": True, "hour": self.hour, "peak": self.hour in PEAK_HOURS}

    @tool(write=True)
    def set_depot_tariff(self, depot: Literal["north", "south", "harbor"], tariff: Literal["flat", "tou", "fleet_ev"]) -> dict[str, Any]:
        """Switch a depot to another electricity tariff.

        Args:
            depot: Depot to change.
            tariff: New tariff.
        """
        if self.depots[depot]["tariff"] == tariff:
            raise ToolError(f"Depot {depot} is already on the {tariff} tariff")
        self.depots[depot]["tariff"] = tariff
        return {"success": True, "depot": depot, "tariff": tariff}
