"""PNG images of OUT/frames.xdmf made by ParaView (run by scripts/render).

Spheres are drawn at their true size (Point Gaussian scaled by `radius`),
polyhedra as their surfaces, walls as translucent quads, and the contact
force network as tubes whose radius is proportional to the normal force
(--field: force_compatible when the run has it, else force_normal; the
largest force of the frame gets half the mean body radius), coloured over
the frame's range of it, with a colour bar when the frame has contacts
that carry force. Bodies are coloured by --color: force
(|contact_force|), velocity (|velocity|) or id, with a colour bar of
their own; with force, the bodies are translucent so the network shows.
The frame's time is written in a corner. ParaView's warnings go to
OUT/render.log, not to the terminal.
"""
import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET

from paraview.simple import (
    Calculator, CellDatatoPointData, ColorBy, ExtractBlock, ExtractSurface, GetActiveViewOrCreate, GetColorTransferFunction, GetScalarBar,
    Hide, Render, SaveScreenshot, Show, Text, Threshold, Tube, Xdmf3ReaderT, servermanager,
)


def parse():
    p = argparse.ArgumentParser(prog="scripts/render", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output directory of a run (holds frames.xdmf)")
    p.add_argument("--frame", default="last", help="step of the frame to draw (as scripts/plot --frame), 'last' (default) or 'all'")
    p.add_argument("--step", type=int, help="the same as --frame STEP")
    p.add_argument("--color", choices=["force", "velocity", "id"], default="force")
    p.add_argument("--output", help="PNG file (default OUT/render.png; with all: OUT/render/frame_NNNN.png)")
    p.add_argument("--size", default="1200x900", help="image size WxH (default 1200x900)")
    p.add_argument("--view", default="1,-2,1", help="camera direction from the focal point, x,y,z (default 1,-2,1)")
    p.add_argument("--field", help="contact column that sizes and colours the force network (default: force_compatible when present, else force_normal)")
    p.add_argument("--report", help="write what each image shows (time, field, colour range, colour bars) to this JSON file")
    return p.parse_args()


def quiet_warnings(log_path):
    """ParaView's (VTK's) warnings into log_path instead of the terminal;
    errors still reach it."""
    try:
        from vtkmodules.vtkCommonCore import vtkLogger
    except ImportError:
        return
    vtkLogger.SetStderrVerbosity(vtkLogger.VERBOSITY_ERROR)
    vtkLogger.LogToFile(log_path, vtkLogger.TRUNCATE, vtkLogger.VERBOSITY_WARNING)


def frame_steps(xdmf):
    """Each frame's step, from the names of the first grid's time steps
    (`bodies_frames_000000100`)."""
    grids = xdmf.getroot().find("Domain").findall("Grid")
    if not grids:
        return []
    out = []
    for g in grids[0].findall("Grid"):
        try:
            out.append(int(g.get("Name", "").rsplit("_", 1)[-1]))
        except ValueError:
            return []
    return out


def contact_columns(xdmf):
    """The contact columns the index lists (cell attributes of the contacts grid)."""
    for g in xdmf.getroot().find("Domain").findall("Grid"):
        if g.get("Name") == "contacts":
            return {a.get("Name") for a in g.iter("Attribute")}
    return set()


def place(bar, corner):
    # ParaView 5.10+ names corners with spaces, older versions in CamelCase.
    for name in (corner, corner.replace(" ", "")):
        try:
            bar.WindowLocation = name
            return
        except (ValueError, AttributeError):
            continue


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
    quiet_warnings(os.path.join(os.path.dirname(path), "render.log"))
    xdmf = ET.parse(path)
    names = [g.get("Name") for g in xdmf.getroot().find("Domain").findall("Grid")]
    columns = contact_columns(xdmf)
    if a.field is None:
        nfield = "force_compatible" if "force_compatible" in columns else "force_normal"
    elif a.field in columns or not columns:
        nfield = a.field
    else:
        fail(f"--field {a.field}: no such contact column in {path} (columns: {', '.join(sorted(columns))})")
    steps = frame_steps(xdmf)
    reader = Xdmf3ReaderT(FileName=[path])
    times = list(reader.TimestepValues or [0.0])
    if a.step is not None:
        if a.step not in steps:
            fail(f"--step {a.step}: no frame at that step (frames at steps {', '.join(map(str, steps[:20]))}{' ...' if len(steps) > 20 else ''})")
        frames = [steps.index(a.step)]
    elif a.frame == "all":
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

    body_bar = {"force": "body contact force, magnitude [N]", "velocity": "body speed [m/s]", "id": "body id"}[a.color]
    body_luts = []

    def colour(rep, source, array_id, location="POINTS"):
        if field is None:
            ColorBy(rep, (location, array_id))
        else:
            ColorBy(rep, ("POINTS", field, "Magnitude"))
        rep.RescaleTransferFunctionToDataRange(True, False)
        # The legend of the bodies' colours, on the left.
        lut = GetColorTransferFunction(field or array_id)
        rep.SetScalarBarVisibility(view, True)
        bar = GetScalarBar(lut, view)
        bar.Title, bar.ComponentTitle = body_bar, ""
        bar.TitleColor = bar.LabelColor = [0.0, 0.0, 0.0]
        place(bar, "Lower Left Corner")
        body_luts.append((rep, source, field or array_id))

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
        loaded = Threshold(Input=grid["contacts"], Scalars=["CELLS", nfield])
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
        trep = Show(tubes, view)
        ColorBy(trep, ("POINTS", nfield))
        lut = GetColorTransferFunction(nfield)
        lut.ApplyPreset("Inferno (matplotlib)", True)
        bar = GetScalarBar(lut, view)
        bar.Title, bar.ComponentTitle = f"contact {nfield} [N]", ""
        bar.TitleColor = bar.LabelColor = [0.0, 0.0, 0.0]
        place(bar, "Lower Right Corner")
    if a.color == "force":
        for r in reps.values():
            r.Opacity = 0.3
    label = Text(Text="")
    shown = Show(label, view)
    shown.Color = [0.0, 0.0, 0.0]
    shown.FontSize = 20
    place(shown, "Upper Left Corner")
    report = []

    for n, k in enumerate(frames):
        t = times[k]
        view.ViewTime = t
        for src in grid.values():
            src.UpdatePipeline(t)
        if tubes is not None:
            # Radius ∝ force: the largest force of the frame gets half the mean body radius.
            fmin, fmax = float("inf"), 0.0
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
                arr = b.GetCellData().GetArray(nfield)
                for i in range(arr.GetNumberOfTuples() if arr is not None else 0):
                    f = arr.GetValue(i)
                    if f > 0:
                        fmin, fmax = min(fmin, f), max(fmax, f)
            rmean = mean_radius(grid)
            radius.Function = f"{nfield}*{0.5 * rmean / fmax if fmax > 0 else 0.0:.17g}"
            # The colours span the forces drawn; no bar for a frame without any.
            if fmax > 0:
                lut.RescaleTransferFunction(fmin, fmax if fmax > fmin else fmin * (1 + 1e-12))
            trep.SetScalarBarVisibility(view, fmax > 0)
        # The bodies' bar only when their colours vary (not for bodies
        # without contact force, or all at rest).
        body_shown = False
        for r, src, name in body_luts:
            r.RescaleTransferFunctionToDataRange(False, False)
            arr = src.PointData.GetArray(name)
            lo, hi = arr.GetRange(-1) if arr is not None else (0.0, 0.0)
            r.SetScalarBarVisibility(view, hi > lo)
            body_shown |= hi > lo
        label.Text = f"t = {t:.6g} s" + (f" (step {steps[k]})" if len(steps) == len(times) else "")
        view.ResetCamera()
        cam = view.GetActiveCamera()
        fp = cam.GetFocalPoint()
        dist = cam.GetDistance()
        norm = sum(x * x for x in direction) ** 0.5
        cam.SetPosition(*[fp[i] + dist * direction[i] / norm for i in range(3)])
        cam.SetViewUp(0.0, 0.0, 1.0)
        view.ResetCamera()
        if a.frame == "all" and a.step is None:
            out = a.output or os.path.join(a.out, "render", "frame_%04d.png")
            out = out % n if "%" in out else os.path.join(out, f"frame_{n:04d}.png")
        else:
            out = a.output or os.path.join(a.out, "render.png")
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        Render(view)
        SaveScreenshot(out, view, ImageResolution=[w, h])
        print(out)
        item = {"image": out, "time": t, "label": label.Text, "body_bar": body_bar if body_luts and body_shown else None}
        if tubes is not None:
            pts = list(lut.RGBPoints)
            item.update(field=nfield, forces=[fmin, fmax] if fmax > 0 else None, range=[pts[0], pts[-4]], bar=bool(fmax > 0))
        report.append(item)
    if a.report:
        with open(a.report, "w") as fh:
            json.dump(report, fh, indent=1)


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
