"""Reads OUT/frames.xdmf with ParaView's own XDMF reader and prints, as
JSON, every grid (bodies, meshes, contacts, walls) at every time step: the
number of points and cells and every point and cell array (name,
components, values). Used by tests/paraview.rs; run it with pvpython:

    pvpython scripts/pv/dump.py OUT/frames.xdmf > frames.json
"""
import json
import os
import sys

import xml.etree.ElementTree as ET

from paraview.simple import Xdmf3ReaderT
from vtkmodules.numpy_interface import dataset_adapter as dsa


def arrays(data):
    out = {}
    for i in range(data.GetNumberOfArrays()):
        a = data.GetArray(i)
        if a is None:
            continue
        v = dsa.vtkDataArrayToVTKArray(a, None)
        out[a.GetName()] = {"components": a.GetNumberOfComponents(), "values": [float(x) for x in v.ravel()]}
    return out


def main(path):
    path = os.path.abspath(path)
    # The reader's blocks carry no names: they are the Domain's top-level
    # grids in file order (bodies, meshes, contacts, walls).
    names = [g.get("Name") for g in ET.parse(path).getroot().find("Domain").findall("Grid")]
    reader = Xdmf3ReaderT(FileName=[path])
    times = list(reader.TimestepValues) if reader.TimestepValues else [0.0]
    result = {"times": times, "grids": {}}
    for t in times:
        reader.UpdatePipeline(t)
        data = reader.GetClientSideObject().GetOutputDataObject(0)
        for i, name in enumerate(names):
            block = data.GetBlock(i)
            result["grids"].setdefault(name, []).append({
                "time": t,
                "points": block.GetNumberOfPoints(),
                "cells": block.GetNumberOfCells(),
                "point_data": arrays(block.GetPointData()),
                "cell_data": arrays(block.GetCellData()),
                "bounds": list(block.GetBounds()) if block.GetNumberOfPoints() else [],
                "coordinates": [block.GetPoint(k)[j] for k in range(block.GetNumberOfPoints()) for j in range(3)],
            })
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
