"""PNG images of OUT/frames.xdmf made by ParaView (run by scripts/render).

Spheres are drawn at their true size (Point Gaussian scaled by `radius`),
polyhedra as their surfaces, walls as translucent quads, and the contact
force network as tubes whose radius is proportional to `force_normal`
(the largest force of the frame gets half the mean body radius). Bodies
are coloured by --color: force (|contact_force|), velocity (|velocity|)
or id; with force, the bodies are translucent so the network shows.
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ET

from paraview.simple import (
    Calculator, CellDatatoPointData, ColorBy, ExtractBlock, ExtractSurface, GetActiveViewOrCreate, GetColorTransferFunction, GetScalarBar,
    Hide, Render, SaveScreenshot, Show, Threshold, Tube, Xdmf3ReaderT, servermanager,
)


def parse():
    p = argparse.ArgumentParser(prog="scripts/render", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output directory of a run (holds frames.xdmf)")
    p.add_argument("--frame", default="last", help="step of the frame to draw (as scripts/plot), 'last' (default) or 'all'")
    p.add_argument("--color", choices=["force", "velocity", "id"], default="force")
    p.add_argument("--output", help="PNG file (default OUT/render.png; with all: OUT/render/frame_NNNN.png)")
    p.add_argument("--size", default="1200x900", help="image size WxH (default 1200x900)")
    p.add_argument("--view", default="1,-2,1", help="camera direction from the focal point, x,y,z (default 1,-2,1)")
    return p.parse_args()


def fail(msg):
    print(f"scripts/render: {msg}", file=sys.stderr)
    sys.exit(2)


def _extract(reader, index):
    # ParaView 5.10+ selects blocks by selector paths; older versions by flat index.
    e = ExtractBlock(Input=reader)
    if "Selectors" in e.ListProperties():
        e.Selectors = [f"/Root/Block{index}"]
    else:
        e.BlockIndices = [index + 1]
    return e


def main():
    a = parse()
    path = os.path.abspath(os.path.join(a.out, "frames.xdmf"))
    if not os.path.exists(path):
        fail(f"{path}: no such file (is {a.out} the output directory of a run?)")
    collections = ET.parse(path).getroot().find("Domain").findall("Grid")
    names = [g.get("Name") for g in collections]
    # Each frame's grid is named <collection>_frames_<step>, in time order.
    steps = [int(g.get("Name").rsplit("_", 1)[-1]) for g in collections[0].findall("Grid")] if collections else []
    reader = Xdmf3ReaderT(FileName=[path])
    times = list(reader.TimestepValues or [0.0])
    if a.frame == "all":
        frames = list(range(len(times)))
    elif a.frame == "last":
        frames = [len(times) - 1]
    else:
        try:
            step = int(a.frame)
        except ValueError:
            fail(f"--frame {a.frame}: expected a step, 'last' or 'all'")
        if step not in steps:
            shown = ", ".join(str(s) for s in steps[:20]) + (" ..." if len(steps) > 20 else "")
            fail(f"--frame {a.frame}: no frame at step {step} (frames: {shown})")
        frames = [steps.index(step)]
    w, h = (int(x) for x in a.size.lower().split("x"))
    direction = [float(x) for x in a.view.split(",")]

    view = GetActiveViewOrCreate("RenderView")
    view.ViewSize = [w, h]
    view.Background = [1.0, 1.0, 1.0]
    if "UseColorPaletteForBackground" in view.ListProperties():
        view.UseColorPaletteForBackground = 0
    view.OrientationAxesVisibility = 0
    view.ViewTime = times[frames[0]]
    grid = {n: _extract(reader, i) for i, n in enumerate(names)}
    field = {"force": "contact_force", "velocity": "velocity"}.get(a.color)

    def colour(rep, source, array_id, location="POINTS"):
        if field is None:
            ColorBy(rep, (location, array_id))
        else:
            ColorBy(rep, ("POINTS", field, "Magnitude"))
        rep.RescaleTransferFunctionToDataRange(True, False)

    reps = {}
    if "bodies" in grid:
        r = Show(grid["bodies"], view)
        r.SetRepresentationType("Point Gaussian")
        r.ShaderPreset = "Sphere"
        r.ScaleByArray = 1
        r.SetScaleArray = ["POINTS", "radius"]
        r.ScaleTransferFunction.Points = [0.0, 0.0, 0.5, 0.0, 1e30, 1e30, 0.5, 0.0]
        r.GaussianRadius = 1.0
        colour(r, grid["bodies"], "id")
        reps["bodies"] = r
    if "meshes" in grid:
        r = Show(grid["meshes"], view)
        r.SetRepresentationType("Surface")
        colour(r, grid["meshes"], "body")
        reps["meshes"] = r
        # Mesh bodies are drawn as surfaces, not as their bounding spheres.
        if "bodies" in reps:
            Hide(grid["bodies"], view)
            del reps["bodies"]
    if "walls" in grid:
        r = Show(grid["walls"], view)
        r.SetRepresentationType("Surface")
        r.ColorArrayName = ["POINTS", ""]
        r.AmbientColor = r.DiffuseColor = [0.6, 0.6, 0.6]
        r.Opacity = 0.25
    tubes = None
    if "contacts" in grid:
        loaded = Threshold(Input=grid["contacts"], Scalars=["CELLS", "force_normal"])
        if "LowerThreshold" in loaded.ListProperties():
            loaded.LowerThreshold, loaded.UpperThreshold = 1e-300, 1e300
        else:
            loaded.ThresholdRange = [1e-300, 1e300]
        # Tube takes polygonal data: the lines' cell values onto their own
        # two points (contacts share no points), then as polydata.
        points = ExtractSurface(Input=CellDatatoPointData(Input=loaded))
        # "By Absolute Scalar" takes the scalar as the radius itself.
        radius = Calculator(Input=points, ResultArrayName="tube_radius", Function="0")
        tubes = Tube(Input=radius)
        tubes.Scalars = ["POINTS", "tube_radius"]
        tubes.VaryRadius = "By Absolute Scalar"
        tubes.NumberofSides = 12
        t = Show(tubes, view)
        ColorBy(t, ("POINTS", "force_normal"))
        lut = GetColorTransferFunction("force_normal")
        lut.ApplyPreset("Inferno (matplotlib)", True)
        t.SetScalarBarVisibility(view, True)
        bar = GetScalarBar(lut, view)
        bar.Title, bar.ComponentTitle = "force_normal", ""
        bar.TitleColor = bar.LabelColor = [0.0, 0.0, 0.0]
    if a.color == "force":
        for r in reps.values():
            r.Opacity = 0.3

    for n, k in enumerate(frames):
        t = times[k]
        view.ViewTime = t
        for src in grid.values():
            src.UpdatePipeline(t)
        if tubes is not None:
            # Radius ∝ force: the largest force of the frame gets half the mean body radius.
            fmax = 0.0
            data = servermanager.Fetch(grid["contacts"])
            arr = None
            it = data.NewIterator() if data.IsA("vtkCompositeDataSet") else None
            blocks = []
            if it is not None:
                it.InitTraversal()
                while not it.IsDoneWithTraversal():
                    blocks.append(it.GetCurrentDataObject())
                    it.GoToNextItem()
            else:
                blocks = [data]
            for b in blocks:
                arr = b.GetCellData().GetArray("force_normal")
                if arr is not None and arr.GetNumberOfTuples():
                    fmax = max(fmax, arr.GetRange()[1])
            rmean = mean_radius(grid)
            radius.Function = f"force_normal*{0.5 * rmean / fmax if fmax > 0 else 0.0:.17g}"
            lut.RescaleTransferFunction(0.0, fmax if fmax > 0 else 1.0)
        view.ResetCamera()
        cam = view.GetActiveCamera()
        fp = cam.GetFocalPoint()
        dist = cam.GetDistance()
        norm = sum(x * x for x in direction) ** 0.5
        cam.SetPosition(*[fp[i] + dist * direction[i] / norm for i in range(3)])
        cam.SetViewUp(0.0, 0.0, 1.0)
        view.ResetCamera()
        if a.frame == "all":
            out = a.output or os.path.join(a.out, "render", "frame_%04d.png")
            out = out % n if "%" in out else os.path.join(out, f"frame_{n:04d}.png")
        else:
            out = a.output or os.path.join(a.out, "render.png")
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        Render(view)
        SaveScreenshot(out, view, ImageResolution=[w, h])
        print(out)


def mean_radius(grid):
    data = servermanager.Fetch(grid["bodies"]) if "bodies" in grid else None
    if data is None:
        return 1.0
    blocks = []
    if data.IsA("vtkCompositeDataSet"):
        it = data.NewIterator()
        it.InitTraversal()
        while not it.IsDoneWithTraversal():
            blocks.append(it.GetCurrentDataObject())
            it.GoToNextItem()
    else:
        blocks = [data]
    total, n = 0.0, 0
    for b in blocks:
        r = b.GetPointData().GetArray("radius")
        if r is None:
            continue
        for i in range(r.GetNumberOfTuples()):
            total += r.GetValue(i)
            n += 1
    return total / n if n else 1.0


if __name__ == "__main__":
    main()
